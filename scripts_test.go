package gateway_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// installStep matches a line of a CI script that reaches a package
// registry: those are the steps a dropped connection can fail.
var installStep = regexp.MustCompile(`\b(apt-get (update|install)|npm install|go install|go mod download)\b`)

// quoted is a quoted string on a line: words in a message, not a command.
var quoted = regexp.MustCompile(`"[^"]*"|'[^']*'`)

// Every install step in the CI scripts goes through retry (scripts/lib.sh):
// a registry that drops one connection must not fail a run whose tests
// would pass.
func TestEveryInstallStepInTheCIScriptsIsRetried(t *testing.T) {
	var scripts []string
	for _, glob := range []string{".ci/*", "scripts/*.sh", "docker/*.sh"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, m...)
	}
	if len(scripts) < 5 {
		t.Fatalf("found only %v", scripts)
	}
	steps := 0
	for _, path := range scripts {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			code := strings.TrimSpace(line)
			if strings.HasPrefix(code, "#") || !installStep.MatchString(quoted.ReplaceAllString(code, `""`)) {
				continue
			}
			steps++
			if !strings.HasPrefix(code, "retry ") {
				t.Errorf("%s:%d: an install step without retry: %s", path, i+1, code)
			}
		}
	}
	if steps < 8 {
		t.Errorf("found %d install steps; the scan no longer sees them", steps)
	}
}

// retry runs a step again after a failure, up to three times, says each
// failure and returns the last status.
func TestRetryRunsAFailingStepThreeTimesAndReturnsItsStatus(t *testing.T) {
	tests := []struct {
		name     string
		failures int // before the step succeeds
		wantRuns int
		wantOK   bool
	}{
		{"a step that succeeds runs once", 0, 1, true},
		{"a step that fails once runs again and passes", 1, 2, true},
		{"a step that fails twice passes on the third run", 2, 3, true},
		{"a step that always fails runs three times and fails", 99, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			count := filepath.Join(t.TempDir(), "runs")
			script := `set -euo pipefail; . scripts/lib.sh
step() { echo x >> "$COUNT"; [ "$(wc -l < "$COUNT")" -gt "$FAILURES" ] || return 7; }
retry step`
			cmd := exec.Command("bash", "-c", script)
			cmd.Env = append(os.Environ(), "COUNT="+count, "FAILURES="+strconv.Itoa(tt.failures), "RETRY_DELAY_OVERRIDE=0")
			out, err := cmd.CombinedOutput()
			if ok := err == nil; ok != tt.wantOK {
				t.Fatalf("succeeded %v, want %v: %s", ok, tt.wantOK, out)
			}
			if !tt.wantOK {
				if ee, isExit := err.(*exec.ExitError); !isExit || ee.ExitCode() != 7 {
					t.Errorf("exit %v, want the step's own status 7", err)
				}
			}
			b, _ := os.ReadFile(count)
			if runs := strings.Count(string(b), "x"); runs != tt.wantRuns {
				t.Errorf("ran %d times, want %d: %s", runs, tt.wantRuns, out)
			}
			if failures := min(tt.failures, 3); strings.Count(string(out), "retry: step: ") != failures {
				t.Errorf("said %d failures, want %d: %s", strings.Count(string(out), "retry: step: "), failures, out)
			}
		})
	}
}
