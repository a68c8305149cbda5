#!/usr/bin/env bash
# Prepares the build context docker/nats.Containerfile expects, in DIR
# (created, must be empty or absent): a NATS server for the compose
# profile `federation`, built from the nats-server module at the version
# this repository's go.mod pins, so the cluster runs the server the
# gateway is tested against.
#
#   DIR/nats-server   static binary (CGO_ENABLED=0, -trimpath)
#   DIR/data/         empty: the JetStream store, owned by the image's user
#
# Nothing is pulled from a registry: FROM scratch gets only these files.
#
#   docker/nats-context.sh /tmp/nats-ctx
#   buildah bud --format docker -f docker/nats.Containerfile -t gateway-nats /tmp/nats-ctx
set -euo pipefail

die() { printf 'nats-context: ERROR: %s\n' "$*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: $0 DIR"
dir=$1
repo=$(cd "$(dirname "$0")/.." && pwd)

if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
	die "$dir is not empty"
fi
mkdir -p "$dir"

# Built inside this module: go.mod decides the version.
(cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
	-o "$dir/nats-server" github.com/nats-io/nats-server/v2) || die "go build of nats-server failed"
chmod 0755 "$dir/nats-server"
install -d -m 0700 "$dir/data"
(cd "$repo" && go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2) >"$dir/VERSION"
