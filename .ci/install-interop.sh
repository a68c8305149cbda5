#!/usr/bin/env bash
# Installs what the interop tests (GATEWAY_INTEROP=1 go test ./interop/...)
# run against: Debian packages tmux, iproute2, procps and chromium, and the
# real peer CLIs from npm into a cache outside the repo. Safe to run again:
# every step is skipped when its result is already there at its pinned version.
#
#   CACHE=${GATEWAY_INTEROP_CACHE:-$HOME/.cache/gateway-interop}
#   $CACHE/claude/node_modules/.bin/claude   Claude Code
#   $CACHE/qwen/node_modules/.bin/qwen   Qwen Code, and @qwen-code/sdk beside it
#   $CACHE/playwright/node_modules/playwright-core   the console's browser test
#   $CACHE/mcp-sdk/node_modules/@modelcontextprotocol/sdk   an independent MCP client
#   $CACHE/redocly/node_modules/.bin/redocly   an independent OpenAPI linter (api/openapi.json)
#
# The tests find the binaries there (or at $GATEWAY_CLAUDE_BIN, $GATEWAY_QWEN_BIN).
set -euo pipefail
# shellcheck source=../scripts/lib.sh
. "$(dirname "$0")/../scripts/lib.sh"

CLAUDE_VERSION=2.1.332
CACHE=${GATEWAY_INTEROP_CACHE:-$HOME/.cache/gateway-interop}

log() { printf 'install-interop: %s\n' "$*" >&2; }
die() { printf 'install-interop: ERROR: %s\n' "$*" >&2; exit 1; }

# --- Debian packages -------------------------------------------------------
# command -> package that provides it
declare -A PKG_FOR=([tmux]=tmux [ss]=iproute2 [ps]=procps [chromium]=chromium)
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
	# env, not a prefix assignment: sudo would drop DEBIAN_FRONTEND.
	retry $SUDO apt-get update -qq || die "apt-get update failed"
	retry $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
		die "could not install ${missing[*]} with apt-get"
	# A package that installs without the command (a transitional one) is no peer.
	for cmd in "${!PKG_FOR[@]}"; do
		command -v "$cmd" >/dev/null 2>&1 || die "$cmd is missing after installing ${PKG_FOR[$cmd]}"
	done
else
	log "tmux, iproute2, procps, chromium: present"
fi

command -v npm >/dev/null 2>&1 || die "npm is required (install Node.js 20 or later)"

# npm_pinned DIR PKG VERSION [NOTE]: PKG at exactly VERSION in DIR's
# node_modules, installed unless it is there already, and checked after.
npm_version() { node -p "require('$1/node_modules/$2/package.json').version" 2>/dev/null || true; }
npm_pinned() {
	local dir=$1 pkg=$2 version=$3 note=${4:-} got
	if [ "$(npm_version "$dir" "$pkg")" = "$version" ]; then
		log "$pkg $version: present in $dir"
		return
	fi
	log "installing $pkg@$version into $dir${note:+ ($note)}"
	mkdir -p "$dir"
	retry npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$pkg@$version" ||
		die "npm install of $pkg@$version into $dir failed"
	got=$(npm_version "$dir" "$pkg")
	[ "$got" = "$version" ] || die "$pkg in $dir is '$got', want $version"
}

# --- playwright-core (drives Debian's chromium for the console's browser test) ---
PLAYWRIGHT_VERSION=1.65.1
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm_pinned "$CACHE/playwright" playwright-core "$PLAYWRIGHT_VERSION" "no browser download"

# --- Claude Code -------------------------------------------------------------
claude_dir=$CACHE/claude
claude_bin=$claude_dir/node_modules/.bin/claude
installed=$(node -p "require('$claude_dir/node_modules/@anthropic-ai/claude-code/package.json').version" 2>/dev/null || true)
if [ "$installed" = "$CLAUDE_VERSION" ] && [ -x "$claude_bin" ]; then
	log "claude-code $CLAUDE_VERSION: present in $claude_dir"
else
	log "installing @anthropic-ai/claude-code@$CLAUDE_VERSION into $claude_dir (about 400 MB)"
	mkdir -p "$claude_dir"
	retry npm install --prefix "$claude_dir" --no-audit --no-fund --loglevel=error \
		"@anthropic-ai/claude-code@$CLAUDE_VERSION" ||
		die "npm install of @anthropic-ai/claude-code@$CLAUDE_VERSION into $claude_dir failed"
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
# The CLI and the SDK (whose @qwen-code/sdk/peer the tests drive with node)
# go into one prefix, so NODE_PATH=$CACHE/qwen/node_modules finds the SDK.
# The packages ask for a newer Node than 20 in "engines" but run on it.
QWEN_VERSION=0.24.4
QWEN_SDK_VERSION=0.1.14
qwen_dir=$CACHE/qwen
qwen_bin=$qwen_dir/node_modules/.bin/qwen
pkg_version() { node -p "require('$qwen_dir/node_modules/$1/package.json').version" 2>/dev/null || true; }
if [ "$(pkg_version @qwen-code/qwen-code)" = "$QWEN_VERSION" ] &&
	[ "$(pkg_version @qwen-code/sdk)" = "$QWEN_SDK_VERSION" ] && [ -x "$qwen_bin" ]; then
	log "qwen-code $QWEN_VERSION, sdk $QWEN_SDK_VERSION: present in $qwen_dir"
else
	log "installing @qwen-code/qwen-code@$QWEN_VERSION and @qwen-code/sdk@$QWEN_SDK_VERSION into $qwen_dir (about 280 MB)"
	mkdir -p "$qwen_dir"
	retry npm install --prefix "$qwen_dir" --no-audit --no-fund --loglevel=error \
		"@qwen-code/qwen-code@$QWEN_VERSION" "@qwen-code/sdk@$QWEN_SDK_VERSION" ||
		die "npm install of @qwen-code/qwen-code@$QWEN_VERSION and @qwen-code/sdk@$QWEN_SDK_VERSION into $qwen_dir failed"
fi
[ -x "$qwen_bin" ] || die "$qwen_bin is missing after npm install"
got=$(pkg_version @qwen-code/sdk)
[ "$got" = "$QWEN_SDK_VERSION" ] || die "@qwen-code/sdk in $qwen_dir is '$got', want $QWEN_SDK_VERSION"
# --version must not reach the network or a real Qwen home: a scratch HOME.
qwen_home=$(mktemp -d)
got=$(env -i PATH="$PATH" HOME="$qwen_home" QWEN_HOME="$qwen_home/.qwen" "$qwen_bin" --version 2>&1) ||
	{ rm -rf "$qwen_home"; die "$qwen_bin --version failed: $got"; }
rm -rf "$qwen_home"
case "$got" in
"$QWEN_VERSION") log "qwen --version: $got" ;;
*) die "$qwen_bin --version printed '$got', want $QWEN_VERSION" ;;
esac

# --- MCP TypeScript SDK (an independent MCP client of the gateway) -------------
MCP_SDK_VERSION=1.32.2
npm_pinned "$CACHE/mcp-sdk" @modelcontextprotocol/sdk "$MCP_SDK_VERSION"

# --- Redocly CLI (lints api/openapi.json independently of the Go tests) ---------
REDOCLY_VERSION=2.77.0
redocly_dir=$CACHE/redocly
npm_pinned "$redocly_dir" @redocly/cli "$REDOCLY_VERSION"
[ -x "$redocly_dir/node_modules/.bin/redocly" ] || die "$redocly_dir/node_modules/.bin/redocly is missing after npm install"

log "done; run: GATEWAY_INTEROP=1 go test ./interop/..."
