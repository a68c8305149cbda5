package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func runCLI(t *testing.T, stateDir string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string {
		if k == "GATEWAY_STATE_DIR" {
			return stateDir
		}
		return ""
	}}
	code := run(context.Background(), e, args)
	return out.String(), errb.String(), code
}

func TestControllersAddListRemove(t *testing.T) {
	sd := filepath.Join(t.TempDir(), "state")
	out, _, code := runCLI(t, sd, "controllers", "add", "--label", "voice front-end")
	tok := strings.TrimSpace(out)
	if code != 0 || !regexp.MustCompile(`^qpc_[0-9a-f]{64}$`).MatchString(tok) {
		t.Fatalf("add printed %q (exit %d), want a qpc_ token", out, code)
	}
	file := filepath.Join(sd, "controllers.json")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(tok[4:])) {
		t.Fatal("the token itself is stored, not only its hash")
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Fatalf("controllers file mode %v, want 0600", fi.Mode().Perm())
	}
	if _, _, code := runCLI(t, sd, "controllers", "add", "--label", "voice front-end"); code == 0 {
		t.Fatal("a second grant with the same label was accepted")
	}
	out, _, _ = runCLI(t, sd, "controllers", "list", "--json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 || list[0]["label"] != "voice front-end" {
		t.Fatalf("list = %s", out)
	}
	if strings.Contains(out, tok) {
		t.Fatal("list shows the token")
	}
	id := list[0]["id"].(string)
	if _, _, code := runCLI(t, sd, "controllers", "remove", id); code != 0 {
		t.Fatalf("remove failed")
	}
	if _, _, code := runCLI(t, sd, "controllers", "remove", id); code == 0 {
		t.Fatal("removing twice succeeded")
	}
}
