#!/usr/bin/env bash
# Builds the container image from docker/Containerfile with buildah and runs
# its entrypoint from the image's exported root filesystem: the binary at
# <rootfs>/gateway, with the image's Entrypoint, Cmd, Env and User, and temp
# directories for state and sessions. It checks that the gateway starts,
# answers the image's HEALTHCHECK (/healthz over the control socket) and
# /readyz, and that SIGTERM makes it exit 0 within a few seconds with its
# Claude Code and Qwen Code registrations removed.
#
# The container itself runs in scripts/container-test.sh (podman and runc);
# this one needs no container runtime. Needs root (a private vfs image store, chroot, setpriv);
# installs buildah with apt-get when it is missing. Everything goes into a
# temp directory that is removed on exit; nothing is cached in the repo.
#
# GATEWAY_IMAGE_ROOT=DIR GATEWAY_IMAGE=NAME GATEWAY_IMAGE_VERSION=V: check
# the image NAME (version V) already built into the overlay store
# DIR/storage, DIR/runroot instead of building one; scripts/container-test.sh
# runs it so, so that CI builds the image once. The store is left as found.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
repo=$PWD

log() { printf 'image-test: %s\n' "$*" >&2; }
die() { printf 'image-test: FAIL: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (buildah with a private store, chroot and setpriv); run it as root or under sudo"

now_ms() { date +%s%3N; }
t_start=$(now_ms)
timings=()
phase_start=$t_start
phase() { # phase NAME: records the time since the previous phase ended
	local t
	t=$(now_ms)
	timings+=("$(printf '%-28s %6d ms' "$1" $((t - phase_start)))")
	phase_start=$t
}

# --- buildah -----------------------------------------------------------------
# As root with the vfs driver buildah needs neither fuse-overlayfs nor uidmap.
if ! command -v buildah >/dev/null 2>&1; then
	command -v apt-get >/dev/null 2>&1 || die "buildah is missing and apt-get is not available to install it"
	log "installing buildah"
	retry apt-get update -qq || die "apt-get update failed"
	retry env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends buildah >/dev/null ||
		die "could not install buildah"
fi
for cmd in setpriv chroot; do
	command -v "$cmd" >/dev/null 2>&1 || die "$cmd is missing (util-linux / coreutils)"
done
log "$(buildah --version)"
phase "buildah present"

work=$(mktemp -d /tmp/gateway-image.XXXXXX)
# The image's user must be able to reach the exported rootfs and run dirs.
chmod 0755 "$work"
pid= ctr=
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null || true
	fi
	if [ -n "$ctr" ]; then
		B umount "$ctr" >/dev/null 2>&1 || true
		B rm "$ctr" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${GATEWAY_IMAGE_ROOT:-}" ]; then
	# --- the image another script built, in its store ----------------------------
	[ -n "${GATEWAY_IMAGE:-}" ] && [ -n "${GATEWAY_IMAGE_VERSION:-}" ] ||
		die "GATEWAY_IMAGE_ROOT needs GATEWAY_IMAGE and GATEWAY_IMAGE_VERSION"
	B() { buildah --storage-driver overlay --root "$GATEWAY_IMAGE_ROOT/storage" --runroot "$GATEWAY_IMAGE_ROOT/runroot" "$@"; }
	image=$GATEWAY_IMAGE version=$GATEWAY_IMAGE_VERSION
	B inspect --type image --format '{{.FromImageID}}' "$image" >/dev/null ||
		die "no image $image in $GATEWAY_IMAGE_ROOT"
	phase "image found"
else
	# A private store under $work: nothing touches the machine's images.
	B() { buildah --storage-driver vfs --root "$work/storage" --runroot "$work/runroot" "$@"; }

	# --- build -----------------------------------------------------------------
	ctx=$work/context
	bash docker/build-context.sh "$ctx" || die "could not prepare the build context (docker/build-context.sh)"
	version=$(cat "$ctx/VERSION")
	phase "static binary + context"

	image=localhost/gateway:image-test
	# --format docker: OCI image configs have no HEALTHCHECK.
	B bud --quiet --format docker --build-arg VERSION="$version" \
		-f docker/Containerfile -t "$image" "$ctx" >/dev/null ||
		die "the image did not build from docker/Containerfile (buildah bud failed, see above)"
	phase "buildah bud"
fi

inspect() { B inspect --type image --format "$1" "$image"; }
nl=$'\n'
mapfile -t entrypoint < <(inspect "{{range .Docker.Config.Entrypoint}}{{.}}$nl{{end}}")
mapfile -t cmdargs < <(inspect "{{range .Docker.Config.Cmd}}{{.}}$nl{{end}}")
mapfile -t imgenv < <(inspect "{{range .Docker.Config.Env}}{{.}}$nl{{end}}")
mapfile -t health < <(inspect "{{range .Docker.Config.Healthcheck.Test}}{{.}}$nl{{end}}")
user=$(inspect '{{.Docker.Config.User}}')
stopsignal=$(inspect '{{.Docker.Config.StopSignal}}')
volumes=$(inspect '{{range $k, $v := .Docker.Config.Volumes}}{{$k}} {{end}}')
log "entrypoint: ${entrypoint[*]} ${cmdargs[*]:-}; user $user; stop signal $stopsignal; healthcheck: ${health[*]:-none}; volumes: $volumes"

((${#entrypoint[@]})) || die "the image has no Entrypoint"
[[ $user =~ ^([0-9]+):([0-9]+)$ ]] || die "the image's User '$user' is not numeric uid:gid"
uid=${BASH_REMATCH[1]} gid=${BASH_REMATCH[2]}
[ "$uid" -ne 0 ] || die "the image runs as root"
[ "$stopsignal" = SIGTERM ] || die "the image's StopSignal is '$stopsignal', want SIGTERM"
[ "${health[0]:-}" = CMD ] || die "the image's HEALTHCHECK is '${health[*]:-none}', want an exec-form CMD"
state_dir=
for kv in "${imgenv[@]}"; do
	case $kv in GATEWAY_STATE_DIR=*) state_dir=${kv#*=} ;; esac
done
[ -n "$state_dir" ] || die "the image sets no GATEWAY_STATE_DIR"
[[ " $volumes " == *" $state_dir "* ]] || die "the state directory $state_dir is not a volume (volumes: $volumes)"

# --- export the root filesystem ------------------------------------------------
ctr=$(B from --quiet "$image")
mnt=$(B mount "$ctr")
rootfs=$work/rootfs
mkdir "$rootfs"
cp -a "$mnt/." "$rootfs/"
B umount "$ctr" >/dev/null
B rm "$ctr" >/dev/null
ctr=
phase "export rootfs"

# Nothing but what the Containerfile puts there.
want=$(printf '%s\n' /etc /etc/ssl /etc/ssl/certs /etc/ssl/certs/ca-certificates.crt /gateway /tmp /var /var/lib "$state_dir" | sort)
got=$(cd "$rootfs" && find . -mindepth 1 | sed 's|^\.||' | sort)
[ "$got" = "$want" ] || die "unexpected rootfs contents:$nl$(diff <(echo "$want") <(echo "$got") || true)"
cmp -s "$rootfs/etc/ssl/certs/ca-certificates.crt" "${GATEWAY_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}" ||
	die "the image's CA bundle is not the build machine's"
[ "$(stat -c '%a %u' "$rootfs/tmp")" = "1777 0" ] || die "/tmp in the image is $(stat -c '%a %u' "$rootfs/tmp"), want 1777 root"
[ "$(stat -c '%u:%g' "$rootfs$state_dir")" = "$uid:$gid" ] || die "$state_dir is not owned by $uid:$gid"
bin=$rootfs${entrypoint[0]}
[ -x "$bin" ] || die "the entrypoint ${entrypoint[0]} is not an executable in the image"
# Inside the rootfs there is no libc: only a static binary runs there.
got=$(chroot --userspec="$uid:$gid" "$rootfs" "${entrypoint[0]}" version 2>&1) ||
	die "the entrypoint does not run inside its own rootfs (not static?): $got"
[[ $got == *"$version"* ]] || die "gateway version printed '$got', want $version"
phase "rootfs checks"

# --- run the entrypoint ----------------------------------------------------------
run=$work/run
install -d -m 0755 "$run"
for d in state home claude qwen xdg tmp; do
	install -d -m 0700 -o "$uid" -g "$gid" "$run/$d"
done
# The image's Env, with its paths moved into temp directories: the state
# volume, HOME, and where Claude Code and Qwen Code sessions live.
envs=()
for kv in "${imgenv[@]}"; do
	case $kv in
	GATEWAY_STATE_DIR=* | HOME=*) ;;
	SSL_CERT_FILE=*) envs+=("SSL_CERT_FILE=$rootfs${kv#*=}") ;;
	*) envs+=("$kv") ;;
	esac
done
envs+=("GATEWAY_STATE_DIR=$run/state" "HOME=$run/home" "CLAUDE_CONFIG_DIR=$run/claude"
	"QWEN_HOME=$run/qwen" "XDG_RUNTIME_DIR=$run/xdg" "TMPDIR=$run/tmp")
as_image_user() { setpriv --reuid="$uid" --regid="$gid" --clear-groups -- env -i "${envs[@]}" "$@"; }

out=$work/gateway.log
# Not through the function: $! must be the gateway itself (setpriv and env exec).
setpriv --reuid="$uid" --regid="$gid" --clear-groups -- env -i "${envs[@]}" \
	"$bin" "${entrypoint[@]:1}" "${cmdargs[@]}" >"$out" 2>&1 &
pid=$!
fail_run() { die "$*${nl}--- gateway log ---${nl}$(cat "$out")"; }

healthcmd=("$rootfs${health[1]}" "${health[@]:2}")
answer=
for _ in $(seq 1 100); do
	kill -0 "$pid" 2>/dev/null || fail_run "the entrypoint exited at start"
	if answer=$(as_image_user "${healthcmd[@]}" 2>/dev/null); then
		break
	fi
	answer=
	sleep 0.1
done
[ -n "$answer" ] || fail_run "the HEALTHCHECK (${health[*]:1}) did not pass within 10 s"
[[ $answer == *"\"version\":\"$version\""* ]] || fail_run "/healthz answered '$answer', want version $version"
phase "start until healthy"
ready=$(as_image_user "$bin" health --ready 2>&1) || fail_run "/readyz: $ready"

# The gateway registered on both local legs, as Claude Code and Qwen Code
# sessions would find it.
[ -f "$run/claude/sessions/$pid.json" ] || fail_run "no Claude Code registry entry $run/claude/sessions/$pid.json"
[ -S "$run/xdg/cc-socks/$pid.sock" ] || fail_run "no Claude Code socket $run/xdg/cc-socks/$pid.sock"
ls "$run/qwen/sessions/$pid"*.json >/dev/null 2>&1 || fail_run "no Qwen Code record in $run/qwen/sessions"
[ -S "$run/state/gateway.sock" ] || fail_run "no control socket"

# --- SIGTERM drains --------------------------------------------------------------
phase_start=$(now_ms)
kill -TERM "$pid"
# Until it is a zombie (exited, not yet reaped by wait) or gone.
exited() {
	local st
	st=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null) || return 0
	[ "${st%% *}" = Z ]
}
for _ in $(seq 1 100); do
	exited && break
	sleep 0.1
done
if ! exited; then
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
	fail_run "SIGTERM did not stop the gateway within 10 s"
fi
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" -eq 0 ] || fail_run "after SIGTERM the gateway exited $rc, want 0"
phase "SIGTERM until exit"
left=$(find "$run/claude/sessions" "$run/qwen/sessions" "$run/xdg" "$run/state" \
	\( -name '*.json' -o -name '*.key' -o -type s \) 2>/dev/null || true)
[ -z "$left" ] || fail_run "registrations left after exit:$nl$left"

total=$(($(now_ms) - t_start))
log "PASS: image $image ($version), built from docker/Containerfile; its entrypoint runs from the exported rootfs as $uid:$gid, answers its HEALTHCHECK and /readyz, and drains on SIGTERM (exit 0, registrations removed)"
for t in "${timings[@]}"; do log "  $t"; done
log "  total                        $(printf '%6d' "$total") ms"
