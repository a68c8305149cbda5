package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/leg/claude"
)

func TestHooksInstallStatusAndUninstallEditTheUsersSettings(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "claude-config")
	t.Setenv("CLAUDE_CONFIG_DIR", cfg)
	state := t.TempDir()
	vars := map[string]string{"GATEWAY_STATE_DIR": state}
	settings := filepath.Join(cfg, "settings.json")

	code, out, errb := runGateway(t, vars, "hooks", "install", "--program", "/usr/local/bin/gateway")
	if code != exitOK || !strings.Contains(out, "installed the gateway's PermissionRequest, Notification, Stop, PostToolUse, PostToolUseFailure hooks in "+settings) {
		t.Fatalf("install: %d %q %q", code, out, errb)
	}
	b, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"/usr/local/bin/gateway hook PermissionRequest --state-dir `+state+`"`) {
		t.Fatalf("settings after install:\n%s", b)
	}

	code, out, _ = runGateway(t, vars, "hooks", "status", "--json")
	var rep claude.HooksReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK {
		t.Fatalf("status --json: %d %q %v", code, out, err)
	}
	if rep.Settings != settings || rep.Listening || rep.Endpoint != filepath.Join(state, "hooks.sock") || len(rep.Events) != len(claude.HookEvents) {
		t.Fatalf("status: %+v", rep)
	}
	for _, e := range rep.Events {
		// status runs as the test binary, not /usr/local/bin/gateway:
		// installed, but not what install would write from here.
		if !e.Installed || e.Current {
			t.Errorf("status of %s: %+v", e.Event, e)
		}
	}

	code, out, _ = runGateway(t, vars, "hooks", "uninstall")
	if code != exitOK || !strings.Contains(out, "took the gateway's hooks out of "+settings) {
		t.Fatalf("uninstall: %d %q", code, out)
	}
	if b, _ := os.ReadFile(settings); string(b) != "{}\n" {
		t.Fatalf("settings after uninstall: %q", b)
	}
}

func TestHooksInstallAlwaysNamesTheStateDir(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "my state")
	code, _, errb := runGateway(t, nil, "hooks", "install", "--project", dir, "--program", "/bin/gateway", "--state-dir", state)
	if code != exitOK {
		t.Fatalf("install --project: %d %q", code, errb)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".claude", "settings.local.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"/bin/gateway hook Stop --state-dir '` + state + `'"`; !strings.Contains(string(b), want) {
		t.Fatalf("project settings lack %s:\n%s", want, b)
	}
}

func TestHooksRefusesTwoSettingsFiles(t *testing.T) {
	code, _, errb := runGateway(t, nil, "hooks", "install", "--settings", "a.json", "--project", ".")
	if code != exitUsage || !strings.Contains(errb, "settings") {
		t.Fatalf("--settings with --project: %d %q", code, errb)
	}
	code, _, errb = runGateway(t, nil, "hooks")
	if code != exitUsage || !strings.Contains(errb, "install, uninstall, status") {
		t.Fatalf("hooks alone: %d %q", code, errb)
	}
}
