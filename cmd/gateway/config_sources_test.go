package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/settings"
)

// configEntries runs `gateway config --json` with vars and returns its
// entries by key.
func configEntries(t *testing.T, vars map[string]string, args ...string) map[string]settings.Entry {
	t.Helper()
	code, stdout, stderr := runGateway(t, vars, append([]string{"config", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("config exit %d: %s", code, stderr)
	}
	var ents []settings.Entry
	if err := json.Unmarshal([]byte(stdout), &ents); err != nil {
		t.Fatal(err)
	}
	got := map[string]settings.Entry{}
	for _, e := range ents {
		got[e.Key] = e
	}
	return got
}

func TestConfigShowsTheEffectiveValueOfDefaults(t *testing.T) {
	dir := t.TempDir()
	got := configEntries(t, map[string]string{"HOME": dir, "GATEWAY_STATE_DIR": filepath.Join(dir, "state")})
	want := map[string]string{
		"remote-url":       defaultRemoteURL,
		"remote-transport": "ws",
		"remote-signer":    "none",
		"remote-reply":     "result",
		"inbound":          "parity",
		"files-dir":        filepath.Join(dir, "state", "files"),
		"config":           "none",
	}
	for key, v := range want {
		if e := got[key]; e.Value != v || e.Source != "default" {
			t.Errorf("%s = %v from %s, want %q from default", key, e.Value, e.Source, v)
		}
	}
	t.Run("a session key changes the default service URL", func(t *testing.T) {
		key := writeConf(t, dir, "sk", "sk-ant-sid01-x", 0o600)
		got := configEntries(t, map[string]string{"HOME": dir, "GATEWAY_STATE_DIR": filepath.Join(dir, "state")}, "--remote-session-key-file", key)
		if e := got["remote-url"]; e.Value != defaultRemoteWebURL || e.Source != "default" {
			t.Errorf("remote-url = %+v, want %s from default", e, defaultRemoteWebURL)
		}
	})
}

func TestTheUserConfigFileIsReadAndTheStateDirsWins(t *testing.T) {
	home, xdg, state := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(xdg, "gateway"), filepath.Join(home, ".config", "gateway")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	userFile := writeConf(t, filepath.Join(xdg, "gateway"), "config.json", "{\n  // the user's\n  \"name\": \"from-user\",\n  \"settle\": \"3s\",\n}", 0o600)
	homeFile := writeConf(t, filepath.Join(home, ".config", "gateway"), "config.json", `{"name": "from-home", "settle": "4s"}`, 0o600)
	stateFile := writeConf(t, state, "config.json", `{"name": "from-state-dir"}`, 0o600)
	tests := []struct {
		name       string
		vars       map[string]string
		wantSettle string
		settleFrom string
	}{
		{"$XDG_CONFIG_HOME/gateway/config.json", map[string]string{"XDG_CONFIG_HOME": xdg}, "3s", userFile + ":4"},
		{"~/.config/gateway/config.json without XDG_CONFIG_HOME", nil, "4s", homeFile + ":1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"HOME": home, "GATEWAY_STATE_DIR": state}
			for k, v := range tt.vars {
				vars[k] = v
			}
			got := configEntries(t, vars)
			if e := got["settle"]; e.Value != tt.wantSettle || e.Source != "file" || e.Origin != tt.settleFrom {
				t.Errorf("settle = %+v, want %s from %s", e, tt.wantSettle, tt.settleFrom)
			}
			if e := got["name"]; e.Value != "from-state-dir" || e.Origin != stateFile+":1" {
				t.Errorf("name = %+v, want the state directory's file to win", e)
			}
			if e := got["config"]; !strings.Contains(e.Value.(string), stateFile) {
				t.Errorf("config = %+v, want both files named", e)
			}
		})
	}
}

func TestAMisspeltConfigKeyGetsADidYouMean(t *testing.T) {
	state := t.TempDir()
	writeConf(t, state, "config.json", `{"remote-ulr": "https://example.com", "held_expiry": "1m", "zzzzzzzz": 1}`, 0o600)
	code, _, stderr := runGateway(t, map[string]string{"HOME": state, "GATEWAY_STATE_DIR": state}, "config")
	if code != exitUsage {
		t.Fatalf("exit %d, want %d: %s", code, exitUsage, stderr)
	}
	for _, want := range []string{`"remote-ulr": unknown key; did you mean "remote-url"?`, `did you mean "held-expiry"?`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, `"zzzzzzzz": unknown key; did you mean`) {
		t.Errorf("a key near nothing got a suggestion:\n%s", stderr)
	}
}
