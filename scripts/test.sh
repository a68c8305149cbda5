#!/usr/bin/env bash
# Runs every test: linters, unit and fuzz-seed tests with the race detector,
# every fuzz target for a few seconds beyond its seeds (scripts/fuzz.sh),
# and the interop tests against the real Claude Code CLI, which it installs
# first (cached outside the repo). It fails loudly when a real peer cannot be
# set up: interop tests are never skipped here.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

# The last lines say how the run ended and, on a failure, in which step,
# closing on a plain "steps: N passed, N failed" line; the exit code stays
# the failing step's.
started=0
step() { current=$1; started=$((started + 1)); echo "== $1"; }
current="start"
trap 'rc=$?; if [ "$rc" -eq 0 ]; then echo "== PASS: every step passed"; echo "steps: $started passed, 0 failed"; else echo "== FAIL (exit $rc): $current"; echo "steps: $((started > 0 ? started - 1 : 0)) passed, 1 failed"; fi; exit "$rc"' EXIT

step "installing what the interop tests need"
bash .ci/install-interop.sh

step "Go modules (downloaded once, so no later step meets a dropped connection)"
retry go mod download

step "nats-server for the federation tests (built from its module, cached outside the repo)"
nats_version=$(go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)
nats_bin="${GATEWAY_NATS_CACHE:-$HOME/.cache/gateway-nats}/$nats_version/nats-server"
if [ ! -x "$nats_bin" ]; then
  mkdir -p "$(dirname "$nats_bin")"
  go build -o "$nats_bin.tmp" github.com/nats-io/nats-server/v2
  mv "$nats_bin.tmp" "$nats_bin"
fi
"$nats_bin" --version || { echo "nats-server at $nats_bin does not run"; exit 1; }
export GATEWAY_NATS_SERVER="$nats_bin"

step "gofmt"
# gofmt's own failure (a file it cannot parse) fails too; only grep's
# "nothing left" is not one.
listed=$(gofmt -l .)
unformatted=$(grep -v '^testdata/' <<<"$listed" || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet ./...

step "staticcheck"
# Installed apart from its run, so only the download is retried.
staticcheck_bin="${GATEWAY_TOOLS_CACHE:-$HOME/.cache/gateway-tools}/staticcheck-v0.8.2"
if [ ! -x "$staticcheck_bin/staticcheck" ]; then
  retry env GOBIN="$staticcheck_bin" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
"$staticcheck_bin/staticcheck" ./...

step "OpenAPI lint (an independent linter, strict: warnings fail too)"
redocly="${GATEWAY_INTEROP_CACHE:-$HOME/.cache/gateway-interop}/redocly/node_modules/.bin/redocly"
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
  "$redocly" lint --extends=recommended-strict --format=summary api/openapi.json

# One build of the image: container-test.sh checks it with image-test.sh too.
step "container image, and the container run with podman and runc"; bash scripts/container-test.sh

step "go test -race (interop on)"
export GATEWAY_INTEROP=1
export GATEWAY_CLAUDE_BIN="${GATEWAY_CLAUDE_BIN:-${GATEWAY_INTEROP_CACHE:-$HOME/.cache/gateway-interop}/claude/node_modules/.bin/claude}"
go test -race -count=1 -timeout 30m ./...

step "fuzzing beyond the seed corpus, every target for a bounded time"
bash scripts/fuzz.sh

step "the bench harness, briefly (figures are read by hand; a path that does not work fails)"
go run ./bench -short

step "benchmarks, one iteration each (a benchmark that breaks fails here; figures are read by hand)"
go test -run '^$' -bench . -benchtime 1x -count=1 -timeout 10m ./...
