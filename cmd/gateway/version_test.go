package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/cli"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// A binary built from a checkout says which commit it is.
func TestVersionNamesTheCommitTheBinaryWasBuiltFrom(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	out, err := exec.Command(gatewaytest.Bin(t), "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var b cli.BuildInfo
	if err := json.Unmarshal(out, &b); err != nil || b.Version != version {
		t.Fatalf("version --json printed %s (%v)", out, err)
	}
	if b.Commit != strings.TrimSpace(string(head)) {
		t.Fatalf("version says commit %q, the checkout is at %s", b.Commit, head)
	}
	line, _ := exec.Command(gatewaytest.Bin(t), "--version").Output()
	if !strings.Contains(string(line), "(commit "+b.Commit[:12]) {
		t.Fatalf("--version printed %q", line)
	}
}

func TestABarePortForTheAPIIsAUsageErrorThatSaysWhatToWrite(t *testing.T) {
	code, _, stderr := runGateway(t, map[string]string{"GATEWAY_STATE_DIR": t.TempDir()}, "serve", "--legs", "none", "--api", "8788")
	if code == exitOK || !strings.Contains(stderr, "want HOST:PORT, such as 127.0.0.1:8788") || strings.Contains(stderr, "missing port") {
		t.Fatalf("serve --api 8788: %d %q", code, stderr)
	}
}
