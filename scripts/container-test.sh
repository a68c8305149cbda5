#!/usr/bin/env bash
# Runs the gateway's real container with podman and runc: builds the
# gateway image (docker/Containerfile) and the NATS image
# (docker/nats.Containerfile), both FROM scratch, once, into a private image
# store under a temp directory, checks the gateway image with
# scripts/image-test.sh (its config, root filesystem and entrypoint, on
# this build: CI builds it once), then runs the Go tests in test/container
# against them (GATEWAY_CONTAINER_ROOT names that directory): the compose
# profiles local, remote and federation as podman run lines, the image's
# HEALTHCHECK, the state volume as the image's user sees it, stop and
# kill/restart. Installs Debian's podman, runc and podman-compose with
# apt-get when missing and fails loudly when a container cannot run;
# nothing is skipped. Every container, volume and image lives in the
# private store, which is reset and removed on exit, failure included.
#
# runc, not the default crun (which fails on hybrid cgroup hosts), the
# cgroupfs manager (no systemd), and ulimits within the hard limits.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

log() { printf 'container-test: %s\n' "$*" >&2; }
die() { printf 'container-test: FAIL: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (podman with a private store, host pid namespace, bind mounts)"

now_ms() { date +%s%3N; }
t_start=$(now_ms)
timings=()
phase_start=$t_start
phase() {
	local t
	t=$(now_ms)
	timings+=("$(printf '%-28s %6d ms' "$1" $((t - phase_start)))")
	phase_start=$t
}

# --- podman, runc, podman-compose ---------------------------------------------
declare -A PKG_FOR=([podman]=podman [runc]=runc [podman-compose]=podman-compose)
missing=()
for cmd in "${!PKG_FOR[@]}"; do
	command -v "$cmd" >/dev/null 2>&1 || missing+=("${PKG_FOR[$cmd]}")
done
if ((${#missing[@]})); then
	command -v apt-get >/dev/null 2>&1 || die "need ${missing[*]} but apt-get is not available"
	log "installing ${missing[*]}"
	retry apt-get update -qq || die "apt-get update failed"
	retry env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
		die "could not install ${missing[*]}"
fi
for cmd in "${!PKG_FOR[@]}"; do
	command -v "$cmd" >/dev/null 2>&1 || die "$cmd is missing after installing ${PKG_FOR[$cmd]}"
done
log "$(podman --version); $(runc --version | head -1); podman-compose $(dpkg-query -W -f '${Version}' podman-compose 2>/dev/null || echo '?')"
phase "podman present"

work=$(mktemp -d /tmp/gateway-podman.XXXXXX)
chmod 0755 "$work"
mkdir -p "$work/storage" "$work/runroot" "$work/tmp"
# Every podman call below and in the Go tests (podman-compose and the
# healthcheck included) uses this store and these settings, through the
# two variables: nothing touches the machine's images or containers.
cat >"$work/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "$work/storage"
runroot = "$work/runroot"
CONF
cat >"$work/containers.conf" <<CONF
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$work/events.log"
tmp_dir = "$work/tmp"
CONF
export CONTAINERS_STORAGE_CONF=$work/storage.conf CONTAINERS_CONF=$work/containers.conf
P() { podman --runtime runc --cgroup-manager cgroupfs "$@"; }
cleanup() {
	P rm --all --force --time 0 >/dev/null 2>&1 || true
	P pod rm --all --force >/dev/null 2>&1 || true
	P volume rm --all --force >/dev/null 2>&1 || true
	P rmi --all --force >/dev/null 2>&1 || true
	# Not `system reset`: it would also remove the machine's networks.
	findmnt -rn -o TARGET | grep "^$work/" | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# --- images, built once ---------------------------------------------------------
bash docker/build-context.sh "$work/ctx" || die "could not prepare the gateway's build context"
version=$(cat "$work/ctx/VERSION")
P build --quiet --format docker --build-arg VERSION="$version" \
	-f docker/Containerfile -t gateway:latest "$work/ctx" >/dev/null ||
	die "the gateway image did not build from docker/Containerfile"
phase "gateway image"
bash docker/nats-context.sh "$work/nats-ctx" || die "could not prepare the NATS image's build context"
P build --quiet --format docker --build-arg VERSION="$(cat "$work/nats-ctx/VERSION")" \
	-f docker/nats.Containerfile -t gateway-nats:latest "$work/nats-ctx" >/dev/null ||
	die "the NATS image did not build from docker/nats.Containerfile"
rm -rf "$work/ctx" "$work/nats-ctx"
phase "NATS image"

# A container must run here; if not, say what the runtime said.
got=$(P run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1000:1000 \
	--entrypoint /gateway gateway:latest version 2>"$work/first.err") ||
	die "podman cannot run a container on this machine: $got $(cat "$work/first.err")"
log "in a container: $got"
phase "first container"

GATEWAY_IMAGE_ROOT=$work GATEWAY_IMAGE=localhost/gateway:latest GATEWAY_IMAGE_VERSION=$version \
	bash scripts/image-test.sh || die "the gateway image failed its checks (scripts/image-test.sh, see above)"
phase "image checks"

GATEWAY_CONTAINER_ROOT=$work go test -count=1 -timeout 10m ${GATEWAY_CONTAINER_TESTFLAGS:-} ./test/container/ ||
	die "the container tests failed (see above)"
phase "go test ./test/container"

total=$(($(now_ms) - t_start))
for t in "${timings[@]}"; do log "  $t"; done
log "  total                        $(printf '%6d' "$total") ms"
