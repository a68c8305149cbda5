#!/usr/bin/env bash
# Runs every Fuzz* target for a bounded time beyond its seed corpus
# (GATEWAY_FUZZTIME each, 5s by default). Each package's instrumented test
# binary is built once and run per target from the package's directory, so
# the seed corpus in testdata/fuzz is read and a new crasher is written
# there (and fails the run): commit it as a seed once the bug is fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
per="${GATEWAY_FUZZTIME:-5s}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ran=0
failed=()
while read -r pkg dir; do
  grep -qs '^func Fuzz.*\*testing\.F)' "$dir"/*_test.go || continue
  bin="$work/$(echo "$pkg" | tr / _).test"
  go test -c -fuzz . -o "$bin" "$pkg"
  # Listed apart from the loop: a listing that fails (a TestMain that exits)
  # or lists nothing must fail the run, not skip the package's targets.
  if ! targets=$(cd "$dir" && "$bin" -test.list '^Fuzz') || [ -z "$targets" ]; then
    echo "fuzz: ${pkg#github.com/sessiongateway/gateway/} declares Fuzz targets but listing them failed or found none"
    failed+=("${pkg#github.com/sessiongateway/gateway/} (listing)")
    continue
  fi
  for t in $targets; do
    ran=$((ran + 1))
    # A failure that wrote no input is the engine's, not the code's (a worker
    # that missed the deadline on a loaded machine says "context deadline
    # exceeded"): it gets up to two more runs; a crasher never does.
    for try in 1 2 3; do
      if (cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^${t}\$" -test.fuzztime "$per" \
        -test.fuzzminimizetime 10s -test.fuzzcachedir "$work/cache") >"$work/log" 2>&1; then
        break
      fi
      cat "$work/log"
      if grep -q 'Failing input written to' "$work/log" || [ "$try" = 3 ]; then
        failed+=("${pkg#github.com/sessiongateway/gateway/} $t")
        break
      fi
      echo "fuzz: $t failed without an input (the engine, not a crasher); running it again"
    done
  done
done < <(go list -f '{{.ImportPath}} {{.Dir}}' ./...)
echo "fuzz: $ran targets, ${per} each, ${#failed[@]} failed"
if [ "${#failed[@]}" -gt 0 ]; then
  for f in "${failed[@]}"; do
    echo "fuzz: failed: $f"
  done
  echo "fuzz: a crasher found is left in its package's testdata/fuzz under $root"
  exit 1
fi
if [ "$ran" -eq 0 ]; then
  echo "fuzz: found no Fuzz targets; the listing is broken" >&2
  exit 1
fi
