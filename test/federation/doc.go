// Package federation tests gateways on several hosts end to end: each host
// is a `gateway serve --federation` binary in its own sandbox World (its own
// HOME, XDG_RUNTIME_DIR and state directory) with fake Claude Code and Qwen
// Code peers beside it, all joined to a real NATS cluster of nats-server
// processes (testkit/natscluster). Nothing leaves loopback. It holds tests
// only.
package federation
