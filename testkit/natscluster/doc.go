// Package natscluster runs a real NATS cluster with JetStream for tests:
// nats-server processes built from the module this repository pins, on
// loopback ports, each storing under the test's temp dir, so a node can be
// killed with SIGKILL and restarted on the same store. Proxy stands between
// a gateway and the cluster so a test can cut one gateway off the network
// and heal it. It imports nothing of ours.
package natscluster
