#!/usr/bin/env bash
# The README's first command: builds the gateway binary as ./gateway (in the
# current directory) and runs `./gateway serve ARGS...` in the foreground.
# A cold build takes a minute or more and go build says nothing meanwhile,
# so this says what it is doing and, on a terminal, counts the packages
# compiled (go build -v names each as it finishes).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="$PWD/gateway"
if ! command -v go >/dev/null; then
  echo "serve.sh: building the gateway needs Go (1.26 or later) on PATH" >&2
  exit 1
fi
echo "building $out (a minute or more the first time)..." >&2
n=0
go build -C "$repo" -buildvcs=auto -v -o "$out" ./cmd/gateway 2>&1 | while IFS= read -r line; do
  case $line in
    *' '* | *:*) # downloads, errors: as they are, on a line of their own
      if [ -t 2 ] && [ "$n" -gt 0 ]; then echo >&2; fi
      printf '%s\n' "$line" >&2
      ;;
    *)
      n=$((n + 1))
      if [ -t 2 ]; then printf '\r  %d packages compiled' "$n" >&2; fi
      ;;
  esac
done
if [ -t 2 ]; then echo >&2; fi
echo "built $out; starting: gateway serve${*:+ $*} (Ctrl-C stops it)" >&2
echo "in another terminal: ./gateway demo-local, then ./gateway sessions (see the Quickstart)" >&2
if ! command -v gateway >/dev/null; then
  # The hints the gateway prints say `gateway ...`: one way to make them work.
  echo "gateway is not on PATH; the hints it prints say \"gateway ...\": put it there with" >&2
  echo "  go install -C \"$repo\" ./cmd/gateway && export PATH=\"\$(go env GOPATH)/bin:\$PATH\"" >&2
fi
exec "$out" serve "$@"
