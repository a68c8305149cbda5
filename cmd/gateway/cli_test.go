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
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
)

// The CLI's output and exit codes are a contract scripts rely on (README.md):
// these tests run the real subcommands against an in-process gateway.

var msgIDLine = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$`)

func TestSendExitCodesAndOutput(t *testing.T) {
	g := startBinary(t, t.TempDir())
	newFake(t, g, "work-08", message.ModePrompting)
	newFake(t, g, "twin", message.ModePrompting)
	newFake(t, g, "twin", message.ModePrompting)

	t.Run("a plain send prints only the message id and exits 0", func(t *testing.T) {
		out, errOut, code := runCLI(t, g.StateDir, "send", "work-08", "plain hello")
		if code != exitOK || !msgIDLine.MatchString(out) {
			t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and one message id", code, out, errOut)
		}
	})
	t.Run("a waited send that is delivered prints the id and delivered and exits 0", func(t *testing.T) {
		out, errOut, code := runCLI(t, g.StateDir, "send", "work-08", "waited hello", "--wait", "--timeout", "5s")
		if code != exitOK || !regexp.MustCompile(`^[0-9a-f-]{36} delivered\b`).MatchString(out) {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("a waited repeat that the receiver drops exits 3 and names the reason", func(t *testing.T) {
		if _, _, code := runCLI(t, g.StateDir, "send", "work-08", "same text twice", "--wait", "--timeout", "5s"); code != exitOK {
			t.Fatalf("first send exit %d", code)
		}
		out, errOut, code := runCLI(t, g.StateDir, "send", "work-08", "same text twice", "--wait", "--timeout", "5s", "--unpaced")
		if code != exitNotDelivered || !strings.Contains(out, " dropped (duplicate)") {
			t.Fatalf("exit %d, stdout %q, stderr %q; want 3 and dropped (duplicate)", code, out, errOut)
		}
	})
	t.Run("a waited bypass send that stays held exits 4 and says it is not final", func(t *testing.T) {
		out, errOut, code := runCLI(t, g.StateDir, "send", "work-08", "bypass hello", "--mode", "bypass", "--wait", "--timeout", "500ms")
		if code != exitPending || !strings.Contains(out, " held") || !strings.Contains(out, "[not final]") {
			t.Fatalf("exit %d, stdout %q, stderr %q; want 4 and held [not final]", code, out, errOut)
		}
		// While it waits it says for what, once.
		if strings.Count(errOut, "holds message") != 1 || !strings.Contains(errOut, "to release or deny it") {
			t.Fatalf("stderr %q; want one line saying the receiver holds it and what the wait is for", errOut)
		}
	})
	t.Run("an unknown name exits 1 and suggests a name that resolves", func(t *testing.T) {
		_, errOut, code := runCLI(t, g.StateDir, "send", "work-8", "hello")
		if code != exitError || !strings.Contains(errOut, "work-08") {
			t.Fatalf("exit %d, stderr %q; want 1 and a suggestion of work-08", code, errOut)
		}
	})
	t.Run("an ambiguous name exits 1 and lists candidates that each resolve to one session", func(t *testing.T) {
		out, _, code := runCLI(t, g.StateDir, "send", "twin", "hello", "--json")
		if code != exitError {
			t.Fatalf("exit %d, want 1", code)
		}
		var body struct {
			Error      string   `json:"error"`
			Candidates []string `json:"candidates"`
		}
		if err := json.Unmarshal([]byte(out), &body); err != nil || len(body.Candidates) != 2 {
			t.Fatalf("body %q (%v); want two candidates", out, err)
		}
		seen := map[string]bool{}
		for _, c := range body.Candidates {
			s, err := g.Resolve(ctxT(t), c)
			if err != nil {
				t.Fatalf("candidate %q does not resolve: %v", c, err)
			}
			seen[s.Address] = true
		}
		if len(seen) != 2 {
			t.Fatalf("candidates %q name %d sessions, want 2", body.Candidates, len(seen))
		}
	})
	t.Run("a bad mode is a usage error, exit 2", func(t *testing.T) {
		if _, _, code := runCLI(t, g.StateDir, "send", "work-08", "hello", "--mode", "yolo"); code != exitUsage {
			t.Fatalf("exit %d, want 2", code)
		}
	})
	t.Run("an empty mode is a usage error, exit 2", func(t *testing.T) {
		if _, _, code := runCLI(t, g.StateDir, "send", "work-08", "hello", "--mode", ""); code != exitUsage {
			t.Fatalf("exit %d, want 2", code)
		}
	})
	t.Run("--wait waits 30 s unless told otherwise", func(t *testing.T) {
		out, _, _ := runCLI(t, g.StateDir, "send", "-h")
		if !regexp.MustCompile(`--timeout duration\s+how long --wait waits \(default 30s\)`).MatchString(out) {
			t.Fatalf("send -h says %q", out)
		}
	})
	t.Run("a send whose write fails exits 3 and says why", func(t *testing.T) {
		dead := "uds:" + filepath.Join(g.Runtime, "cc-socks", "999999.sock")
		out, errOut, code := runCLI(t, g.StateDir, "send", dead, "to nobody")
		if code != exitNotDelivered || !strings.Contains(errOut, "send failed") || !msgIDLine.MatchString(out) {
			t.Fatalf("exit %d, stdout %q, stderr %q; want 3, the id, and send failed", code, out, errOut)
		}
	})
	t.Run("a failed send --wait says why once", func(t *testing.T) {
		dead := "uds:" + filepath.Join(g.Runtime, "cc-socks", "999998.sock")
		out, errOut, code := runCLI(t, g.StateDir, "send", dead, "to nobody", "--wait")
		if code != exitNotDelivered || !strings.Contains(out, "failed") || strings.Contains(errOut, "send failed") {
			t.Fatalf("exit %d, stdout %q, stderr %q; want 3 and the failure on stdout only", code, out, errOut)
		}
	})
	t.Run("a missing text is a usage error, exit 2", func(t *testing.T) {
		if _, _, code := runCLI(t, g.StateDir, "send", "work-08"); code != exitUsage {
			t.Fatalf("exit %d, want 2", code)
		}
	})
	t.Run("with no gateway running, send exits 1 and says how to start one", func(t *testing.T) {
		_, errOut, code := runCLI(t, filepath.Join(t.TempDir(), "none"), "send", "work-08", "hello")
		if code != exitError || !strings.Contains(errOut, "gateway serve") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
}

func TestSessionsJSONHasEveryContractKey(t *testing.T) {
	g := startBinary(t, t.TempDir())
	newFake(t, g, "work-08", message.ModePrompting)
	out, errOut, code := runCLI(t, g.StateDir, "sessions", "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &entries); err != nil || len(entries) != 1 {
		t.Fatalf("stdout %q (%v); want one entry", out, err)
	}
	for _, key := range []string{"address", "protocol", "name", "ref", "session_id", "pid", "kind", "reachable"} {
		if _, ok := entries[0][key]; !ok {
			t.Errorf("entry %s lacks %q", out, key)
		}
	}

	t.Run("the table shows the name, ref and protocol", func(t *testing.T) {
		out, _, code := runCLI(t, g.StateDir, "sessions")
		var ref string
		_ = json.Unmarshal(entries[0]["ref"], &ref)
		if code != exitOK || !regexp.MustCompile(`(?m)^work-08\s+`+ref+`\s+claude\s`).MatchString(out) {
			t.Fatalf("exit %d, table %q", code, out)
		}
	})
	t.Run("with no session, --json prints an empty array, not null", func(t *testing.T) {
		empty := startBinary(t, t.TempDir())
		out, _, code := runCLI(t, empty.StateDir, "sessions", "--json")
		if code != exitOK || strings.TrimSpace(out) != "[]" {
			t.Fatalf("exit %d, stdout %q", code, out)
		}
	})
}

func TestWatchPrintsAMessageWithTheSendersName(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	if _, err := fk.Send(ctxT(t), gatewayAddress(t, g), "ping from work", message.ModePrompting); err != nil {
		t.Fatal(err)
	}
	// --since 0 replays the kept event, so watch has something to print
	// without racing the send; the test's context ends the watch.
	var out string
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out, "message from work-08 -> the gateway: ping from work") {
		if time.Now().After(deadline) {
			t.Fatalf("watch printed %q", out)
		}
		out = watchOnce(t, g.StateDir)
	}
}

// Watch shows traffic between other sessions too: a bridged message says to
// whom it went, so it does not read like one to the watcher.
func TestWatchSaysToWhomABridgedMessageWent(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	newQwenPeer(t, g, "qwen-work", message.ModePrompting)
	if _, err := fk.Send(ctxT(t), claudeAlias(t, g, "qwen-work"), "to qwen, watched", message.ModePrompting); err != nil {
		t.Fatal(err)
	}
	var out string
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out, "message from work-08 -> qwen-work: to qwen, watched") {
		if time.Now().After(deadline) {
			t.Fatalf("watch printed %q", out)
		}
		out = watchOnce(t, g.StateDir)
	}
}

// watchOnce runs `gateway watch --since 0` for a short while and returns
// what it printed.
func watchOnce(t *testing.T, stateDir string) string {
	t.Helper()
	// Cancelled, as an interrupt does: watch then exits 0.
	ctx, cancel := context.WithCancel(context.Background())
	defer time.AfterFunc(300*time.Millisecond, cancel).Stop()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code := run(ctx, e, []string{"watch", "--since", "0", "--state-dir", stateDir})
	if code != exitOK {
		t.Fatalf("watch exit %d: %s", code, errb.String())
	}
	return out.String()
}

func TestTheStateDirectoryKeepsItsSecretsPrivate(t *testing.T) {
	g := startBinary(t, t.TempDir(), "--api", "127.0.0.1:0")
	tests := []struct {
		name string
		path string
		want os.FileMode
	}{
		{"the state directory is 0700", g.StateDir, os.ModeDir | 0o700},
		{"the control socket is 0600", filepath.Join(g.StateDir, "gateway.sock"), os.ModeSocket | 0o600},
		{"the API token is 0600", filepath.Join(g.StateDir, "api-token"), 0o600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fi, err := os.Lstat(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode() & (os.ModeType | os.ModePerm); got != tt.want {
				t.Fatalf("mode = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEveryCommandTakesTheStateDirFlag(t *testing.T) {
	for _, c := range (&app{e: &env{getenv: func(string) string { return "" }}}).root().Commands() {
		t.Run(c.Name()+" accepts --state-dir", func(t *testing.T) {
			if _, errOut, code := runCLI(t, t.TempDir(), c.Name(), "--state-dir", t.TempDir(), "-h"); code != exitOK {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
		})
	}
}

func TestVersionPrintsTheBuildsVersion(t *testing.T) {
	out, _, code := runCLI(t, t.TempDir(), "version")
	if code != exitOK || out != "gateway "+version+"\n" {
		t.Fatalf("exit %d, %q", code, out)
	}
	out, _, code = runCLI(t, t.TempDir(), "version", "--json")
	var v struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil || v.Version != version {
		t.Fatalf("exit %d, %q (%v); want {\"version\": %q}", code, out, err, version)
	}
}

func TestIdleWaitThatHearsNothingExits4(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	// A hold pending at the peer defers its idle notices (as in Claude Code).
	held, err := g.Send(ctxT(t), api.SendBody{To: "work-08", Text: "hold me", Mode: "bypass", Wait: true, Timeout: "1s"})
	if err != nil || held.Status != message.StatusHeld {
		t.Fatalf("send = %+v, %v; want held", held, err)
	}
	_, errOut, code := runCLI(t, g.StateDir, "idle", "work-08", "--wait", "--timeout", "300ms")
	if code != exitPending || !strings.Contains(errOut, "no idle notice before the timeout") {
		t.Fatalf("exit %d, stderr %q; want 4", code, errOut)
	}
	fk.Decide(ctxT(t), held.Message.ID, false)
	if out, _, code := runCLI(t, g.StateDir, "idle", "work-08", "--wait", "--timeout", "5s"); code != exitOK || !strings.Contains(out, " idle") {
		t.Fatalf("after the decision: exit %d, %q", code, out)
	}
}

func TestWatchStartsAtNowByDefault(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	if _, err := fk.Send(ctxT(t), gatewayAddress(t, g), "an old message", message.ModePrompting); err != nil {
		t.Fatal(err)
	}
	// The old message is kept (--since 0 replays it) ...
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(watchOnce(t, g.StateDir), "an old message"); {
		if time.Now().After(deadline) {
			t.Fatal("the message never reached the gateway")
		}
	}
	// ... but a plain watch shows only what happens from now on.
	ctx, cancel := context.WithCancel(context.Background())
	defer time.AfterFunc(300*time.Millisecond, cancel).Stop()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	if code := run(ctx, e, []string{"watch", "--state-dir", g.StateDir}); code != exitOK {
		t.Fatalf("watch exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), "an old message") {
		t.Fatalf("a plain watch replayed an old event: %q", out.String())
	}
}
