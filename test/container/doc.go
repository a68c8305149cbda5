// Package container runs the gateway's real container image with podman
// and runc, as docker/compose.yaml's profiles run it: local beside fake
// Claude Code and Qwen Code sessions, remote against the fake claude.ai,
// and federation (two gateways on a three-node NATS cluster, both images
// built FROM scratch). Each compose service becomes the podman run line it
// stands for, read from the file itself, with loopback networking in place
// of compose's bridge network; see compose_test.go for what podman-compose
// (Debian's 1.0.3) lacks. scripts/container-test.sh builds the images once
// into a private store and runs these tests with GATEWAY_CONTAINER_ROOT
// naming it; without that variable they skip.
package container
