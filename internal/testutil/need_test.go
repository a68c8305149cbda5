package testutil

import (
	"fmt"
	"strings"
	"testing"
)

// outcome records how a helper ended a test, without ending this one.
type outcome struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (o *outcome) Helper() {}
func (o *outcome) Fatalf(format string, args ...any) {
	o.failed, o.msg = true, fmt.Sprintf(format, args...)
}
func (o *outcome) Skip(args ...any) { o.skipped, o.msg = true, fmt.Sprint(args...) }

func TestNeedAndInteropFailUnderCIAndSkipElsewhere(t *testing.T) {
	tests := []struct {
		name            string
		interop, ci     string
		have            bool
		call            func(tb testing.TB, have bool)
		failed, skipped bool
	}{
		{"what a test has lets it run anywhere", "1", "true", true, need, false, false},
		{"a missing piece skips on a developer's machine", "", "", false, need, false, true},
		{"a missing piece fails with the interop tests on", "1", "", false, need, true, false},
		{"a missing piece fails in CI", "", "true", false, need, true, false},
		{"CI=false is not CI", "", "false", false, need, false, true},
		{"interop tests skip when they are off", "", "", false, interop, false, true},
		{"interop tests run when they are on", "1", "", false, interop, false, false},
		{"interop tests run in CI when they are on", "1", "true", false, interop, false, false},
		{"interop tests fail in CI when they are off", "", "true", false, interop, true, false},
		{"GATEWAY_INTEROP=0 is off", "0", "", false, interop, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(InteropEnv, tt.interop)
			t.Setenv("CI", tt.ci)
			var o outcome
			tt.call(&o, tt.have)
			if o.failed != tt.failed || o.skipped != tt.skipped {
				t.Fatalf("failed %v, skipped %v (%q); want failed %v, skipped %v", o.failed, o.skipped, o.msg, tt.failed, tt.skipped)
			}
			if (o.failed || o.skipped) && !strings.Contains(o.msg, "the thing") {
				t.Fatalf("message %q does not say what is missing", o.msg)
			}
		})
	}
}

func need(tb testing.TB, have bool) { Need(tb, have, "no %s here", "the thing") }
func interop(tb testing.TB, _ bool) { Interop(tb, "set it to run the thing") }
