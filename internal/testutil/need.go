package testutil

import (
	"fmt"
	"os"
	"testing"
)

// InteropEnv turns the interop tests on when it is "1": scripts/test.sh
// (and so CI) sets it after .ci/install-interop.sh installed every real
// counterpart the tests run against.
const InteropEnv = "GATEWAY_INTEROP"

// InteropOn reports whether the interop tests are on.
func InteropOn() bool { return os.Getenv(InteropEnv) == "1" }

// inCI reports whether a CI runner is running the tests (they set CI=true).
func inCI() bool { return os.Getenv("CI") == "true" }

// Strict reports whether a missing prerequisite must fail a test rather
// than skip it: with the interop tests on, or in CI, everything the tests
// need is installed, so a missing piece is a broken set-up, never a pass.
func Strict() bool { return InteropOn() || inCI() }

// Need ends tb when it does not have what it needs (have is false): it
// fails under Strict and skips elsewhere. The message names what is
// missing; under Strict it also says why that fails.
func Need(tb testing.TB, have bool, format string, args ...any) {
	tb.Helper()
	if have {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if Strict() {
		tb.Fatalf("%s (%s=1 or CI=true: everything the tests need must be there, so this fails rather than skips)", msg, InteropEnv)
		return
	}
	tb.Skip(msg)
}

// Interop skips tb unless the interop tests are on, saying how to turn them
// on (how); in CI it fails instead, since CI must run them.
func Interop(tb testing.TB, how string) {
	tb.Helper()
	if InteropOn() {
		return
	}
	if inCI() {
		tb.Fatalf("CI=true but %s is not 1: the interop tests must run in CI (bash .ci/run sets it); %s", InteropEnv, how)
		return
	}
	tb.Skip(how)
}
