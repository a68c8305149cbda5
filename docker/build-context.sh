#!/usr/bin/env bash
# Prepares the build context docker/Containerfile expects, in DIR (created,
# must be empty or absent), from the repository this script lives in:
#
#   DIR/gateway              static binary (CGO_ENABLED=0, -trimpath, version
#                            from `git describe` or $GATEWAY_VERSION)
#   DIR/ca-certificates.crt  the build machine's CA bundle
#   DIR/skel/                /tmp (1777) and /var/lib, root-owned in the image
#   DIR/state/               empty: the state volume, owned by the image's user
#
# Nothing is pulled from a registry: FROM scratch gets only these files.
#
#   docker/build-context.sh /tmp/ctx
#   buildah bud --format docker -f docker/Containerfile -t gateway /tmp/ctx
set -euo pipefail

die() { printf 'build-context: ERROR: %s\n' "$*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: $0 DIR"
dir=$1
repo=$(cd "$(dirname "$0")/.." && pwd)
certs=${GATEWAY_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

[ -r "$certs" ] || die "no CA bundle at $certs (install ca-certificates, or set GATEWAY_CA_BUNDLE)"
if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
	die "$dir is not empty"
fi
mkdir -p "$dir"

version=${GATEWAY_VERSION:-$(git -C "$repo" describe --tags --always --dirty 2>/dev/null || echo dev)}
# Static and reproducible: no cgo (scratch has no libc), no build paths.
(cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$version" \
	-o "$dir/gateway" ./cmd/gateway) || die "go build failed"
chmod 0755 "$dir/gateway"

install -m 0644 "$certs" "$dir/ca-certificates.crt"
# COPY keeps these modes; the sticky /tmp is where Claude Code's sockets go
# (/tmp/cc-socks) when XDG_RUNTIME_DIR is unset.
install -d -m 0755 "$dir/skel" "$dir/skel/var" "$dir/skel/var/lib"
install -d -m 1777 "$dir/skel/tmp"
install -d -m 0700 "$dir/state"
printf '%s\n' "$version" >"$dir/VERSION"
