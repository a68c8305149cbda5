#!/usr/bin/env bash
# Installs what the interop tests (GATEWAY_INTEROP=1 go test ./interop/...)
# run against: Debian packages tmux, iproute2 and procps, and the real
# peer CLIs from npm into a cache outside the repo. Safe to run again: every
# step is skipped when its result is already there.
#
#   CACHE=${GATEWAY_INTEROP_CACHE:-$HOME/.cache/gateway-interop}
#   $CACHE/claude/node_modules/.bin/claude   Claude Code
#
# The tests find the binary there (or at $GATEWAY_CLAUDE_BIN).
set -euo pipefail

CLAUDE_VERSION=2.1.332
CACHE=${GATEWAY_INTEROP_CACHE:-$HOME/.cache/gateway-interop}

log() { printf 'install-interop: %s\n' "$*" >&2; }
die() { printf 'install-interop: ERROR: %s\n' "$*" >&2; exit 1; }

# --- Debian packages -------------------------------------------------------
# command -> package that provides it
declare -A PKG_FOR=([tmux]=tmux [ss]=iproute2 [ps]=procps)
missing=()
for cmd in "${!PKG_FOR[@]}"; do
	command -v "$cmd" >/dev/null 2>&1 || missing+=("${PKG_FOR[$cmd]}")
done
if ((${#missing[@]})); then
	command -v apt-get >/dev/null 2>&1 || die "need ${missing[*]} but apt-get is not available"
	SUDO=
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "need root or sudo to install ${missing[*]}"
		SUDO=sudo
	fi
	log "installing ${missing[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
	log "tmux, iproute2, procps: present"
fi

command -v npm >/dev/null 2>&1 || die "npm is required (install Node.js 20 or later)"

# --- Claude Code -------------------------------------------------------------
claude_dir=$CACHE/claude
claude_bin=$claude_dir/node_modules/.bin/claude
installed=$(node -p "require('$claude_dir/node_modules/@anthropic-ai/claude-code/package.json').version" 2>/dev/null || true)
if [ "$installed" = "$CLAUDE_VERSION" ] && [ -x "$claude_bin" ]; then
	log "claude-code $CLAUDE_VERSION: present in $claude_dir"
else
	log "installing @anthropic-ai/claude-code@$CLAUDE_VERSION into $claude_dir (about 400 MB)"
	mkdir -p "$claude_dir"
	npm install --prefix "$claude_dir" --no-audit --no-fund --loglevel=error \
		"@anthropic-ai/claude-code@$CLAUDE_VERSION"
fi
[ -x "$claude_bin" ] || die "$claude_bin is missing after npm install"
# --version must not reach the network: keep the updater and telemetry off.
got=$(DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
	"$claude_bin" --version 2>&1) || die "$claude_bin --version failed: $got"
case "$got" in
"$CLAUDE_VERSION "* | "$CLAUDE_VERSION") log "claude --version: $got" ;;
*) die "$claude_bin --version printed '$got', want $CLAUDE_VERSION" ;;
esac

# --- Qwen Code ---------------------------------------------------------------
# To be added: npm install --prefix "$CACHE/qwen" @qwen-code/qwen-code@0.24.4
# @qwen-code/sdk@0.1.14, skip when present, then check `qwen --version`.
# Follow the Claude Code block above (one directory per CLI under $CACHE).

log "done; run: GATEWAY_INTEROP=1 go test ./interop/..."
