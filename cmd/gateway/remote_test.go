package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/message/eventfmt"
)

// syncBuffer is written by a running command while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// watchUntil runs `gateway remote watch` until its output holds done, then
// stops it and returns the output.
func (g *promptGateway) watchUntil(t *testing.T, done string, args ...string) string {
	t.Helper()
	var out, errb syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }},
			append(append([]string{"remote", "watch"}, args...), "--state-dir", g.stateDir))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), done) {
		select {
		case code := <-exit:
			cancel()
			t.Fatalf("watch ended (exit %d) before printing %q:\n%s\n%s", code, done, out.String(), errb.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			<-exit
			t.Fatalf("watch did not print %q:\n%s\n%s", done, out.String(), errb.String())
		}
	}
	cancel()
	if code := <-exit; code != exitOK {
		t.Fatalf("watch exit %d: %s", code, errb.String())
	}
	return out.String()
}

func remoteEvent(session, kind, msgID, text string, final bool) message.Event {
	return message.Event{Type: message.EventRemote, Leg: message.ProtocolRemote, Remote: &message.RemoteEvent{
		SessionID: session, Address: "bridge:" + session, Kind: kind, MessageID: msgID, Text: text, Final: final}}
}

func TestRemoteSessionsListsOnlyRemoteOnes(t *testing.T) {
	g := startPromptGateway(t)
	out, _, code := g.cli(t, "remote", "sessions", "--json")
	var ss []message.Session
	if code != exitOK || json.Unmarshal([]byte(out), &ss) != nil || len(ss) != 1 || ss[0].SessionID != remoteSID || ss[0].Protocol != message.ProtocolRemote {
		t.Fatalf("exit %d: %s", code, out)
	}
	out, _, code = g.cli(t, "remote", "sessions")
	if code != exitOK || !strings.Contains(out, "fix-the-bug") || !strings.Contains(out, "bridge:"+remoteSID) || strings.Contains(out, "review") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestRemoteControlCommands(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		want     message.Control // sent when code is exitOK
		errorHas string
	}{
		{"interrupt takes the bare session id", []string{"interrupt", remoteSID}, exitOK, message.Control{Kind: message.ControlInterrupt}, ""},
		{"interrupt takes a unique start of the session id", []string{"interrupt", remoteSID[:10]}, exitOK, message.Control{Kind: message.ControlInterrupt}, ""},
		{"mode takes a bridge address", []string{"mode", "bridge:" + remoteSID, "plan"}, exitOK, message.Control{Kind: message.ControlSetPermissionMode, Mode: "plan"}, ""},
		{"model takes the session's name", []string{"model", "fix-the-bug", "claude-opus-4-5"}, exitOK, message.Control{Kind: message.ControlSetModel, Model: "claude-opus-4-5"}, ""},
		{"mode without a mode is a usage error", []string{"mode", remoteSID}, exitUsage, message.Control{}, "usage"},
		{"a session of a leg without controls is refused", []string{"interrupt", "review"}, exitError, message.Control{}, "control requests"},
		{"an unknown session is not found", []string{"interrupt", "nobody"}, exitError, message.Control{}, "nobody"},
		{"an unknown subcommand is a usage error", []string{"reboot", remoteSID}, exitUsage, message.Control{}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startPromptGateway(t)
			_, errOut, code := g.cli(t, append([]string{"remote"}, tt.args...)...)
			if code != tt.code || !strings.Contains(errOut, tt.errorHas) {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, errOut)
			}
			cs := g.leg.Controls()
			if tt.code != exitOK {
				if len(cs) != 0 {
					t.Fatalf("the leg got %+v", cs)
				}
				return
			}
			if ts := g.leg.Targets(); len(cs) != 1 || cs[0] != tt.want || ts[0].SessionID != remoteSID {
				t.Fatalf("the leg got %+v for %+v", cs, ts)
			}
		})
	}
}

func TestRemoteWatch(t *testing.T) {
	g := startPromptGateway(t)
	g.raise(t,
		remoteEvent(remoteSID, "user", "", "fix the flaky test", false),
		remoteEvent(remoteSID, "assistant", "m1", "Hel", false),
		remoteEvent("session_other", "assistant", "m9", "not for us", false),
		remoteEvent(remoteSID, "assistant", "m1", "Hello", false),
		remoteEvent(remoteSID, "assistant", "m1", "Hello, world", true),
		remoteEvent(remoteSID, "assistant", "m1", "Hello, world", true), // a replayed copy
		pendingPrompt("bash", "Bash", `{"command":"go test ./..."}`),
		remoteEvent(remoteSID, "result", "", "done", true),
		message.Event{Type: message.EventLink, Leg: message.ProtocolRemote, Link: &message.Link{SessionID: remoteSID, State: message.LinkReconnecting, Attempt: 2, Error: "stalled"}},
	)
	id := g.idOf(t, "bash")

	t.Run("the human form streams text once and shows prompts with how to answer", func(t *testing.T) {
		out := g.watchUntil(t, "link reconnecting", remoteSID, "--since", "0")
		for _, want := range []string{
			"user: fix the flaky test\n",
			"assistant: Hello, world\n",
			"permission " + id + " from " + remoteSID + ": Bash go test ./...",
			// Hints carry the state dir the watch was given, as it is not the default.
			"gateway --state-dir " + g.stateDir + " allow " + id,
			"gateway --state-dir " + g.stateDir + " deny " + id + " --message TEXT",
			"result: done\n",
			"link reconnecting (attempt 2): stalled",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Count(out, "Hel") != 1 || strings.Contains(out, "not for us") {
			t.Errorf("streamed text repeated or another session's shown:\n%s", out)
		}
	})
	t.Run("the JSON form prints this session's events one per line", func(t *testing.T) {
		out := g.watchUntil(t, `"remote_link"`, "bridge:"+remoteSID, "--since", "0", "--json")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 8 {
			t.Fatalf("%d lines, want 8:\n%s", len(lines), out)
		}
		for _, l := range lines {
			var ev message.Event
			if err := json.Unmarshal([]byte(l), &ev); err != nil || !eventfmt.AboutSession(ev, remoteSID) {
				t.Fatalf("line %s: %v", l, err)
			}
		}
	})
	t.Run("a watch from now on first shows the prompts still pending", func(t *testing.T) {
		out := g.watchUntil(t, " allow "+id, "fix-the-bug")
		if strings.Contains(out, "Hello") {
			t.Fatalf("old output replayed:\n%s", out)
		}
	})
	t.Run("a local session cannot be watched as a remote one", func(t *testing.T) {
		_, errOut, code := g.cli(t, "remote", "watch", "review")
		if code != exitError || !strings.Contains(errOut, "not a remote one") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
}
