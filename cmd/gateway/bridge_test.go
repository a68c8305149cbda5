package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// claudeAlias waits for the gateway's alias worker named name and returns
// its address.
func claudeAlias(t *testing.T, g *gatewaytest.Gateway, name string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(g.ConfigDir, "sessions", "*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if e, err := claude.ParseEntry(b); err == nil && e.Name == name && e.Kind == claude.KindAlias {
				return addressing.UDS(e.MessagingSocketPath)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no alias worker named %q appeared", name)
	return ""
}

// qwenAlias waits until the in-process Qwen peer lists a session named name.
func qwenAlias(t *testing.T, q *qwenPeer, name string) message.Session {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		ss, _ := q.Sessions(ctxT(t))
		for _, s := range ss {
			if s.Name == name {
				return s
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the qwen side never listed %q", name)
	return message.Session{}
}

func TestClaudeAndQwenTalkThroughTheBridge(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	q := newQwenPeer(t, g, "qwen-work", message.ModePrompting)
	alias := claudeAlias(t, g, "qwen-work")

	t.Run("a Claude session's message to the Qwen name arrives with the sender's name", func(t *testing.T) {
		if _, err := fk.Send(ctxT(t), alias, "hello qwen, from claude", message.ModePrompting); err != nil {
			t.Fatal(err)
		}
		ev := q.wait(t, func(ev message.Event) bool {
			return ev.Type == message.EventMessage && ev.Message.Body == "hello qwen, from claude"
		})
		if ev.Message.FromName != "work-08" || ev.Message.Mode != message.ModePrompting {
			t.Fatalf("qwen got %+v", ev.Message)
		}
	})
	t.Run("the Qwen session's answer by name comes back from the Qwen alias", func(t *testing.T) {
		back := qwenAlias(t, q, "work-08")
		if _, err := q.Send(ctxT(t), message.Message{ID: "a0000000-0000-4000-8000-000000000001", To: back.Address, ToSessionID: back.SessionID,
			Body: "answer from qwen", Mode: message.ModePrompting}); err != nil {
			t.Fatal(err)
		}
		r, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool { return r.Content.Envelope.Body == "answer from qwen" })
		if err != nil {
			t.Fatal(err)
		}
		if r.Content.Envelope.FromName != "qwen-work" || r.Frame.From != alias {
			t.Fatalf("claude got %+v from %s, want it from the qwen-work alias %s", r.Content.Envelope, r.Frame.From, alias)
		}
		rev := q.wait(t, func(ev message.Event) bool {
			return ev.Type == message.EventReceipt && ev.Receipt.MsgID == "a0000000-0000-4000-8000-000000000001"
		})
		if rev.Receipt.Status != message.StatusDelivered {
			t.Fatalf("the qwen sender heard %+v, want delivered", rev.Receipt)
		}
	})
	t.Run("a hold on the Claude side reaches the Qwen sender as a held receipt", func(t *testing.T) {
		back := qwenAlias(t, q, "work-08")
		id := "a0000000-0000-4000-8000-000000000002"
		if _, err := q.Send(ctxT(t), message.Message{ID: id, To: back.Address, ToSessionID: back.SessionID,
			Body: "bypass answer from qwen", Mode: message.ModeBypass}); err != nil {
			t.Fatal(err)
		}
		rev := q.wait(t, func(ev message.Event) bool { return ev.Type == message.EventReceipt && ev.Receipt.MsgID == id })
		if rev.Receipt.Status != message.StatusHeld {
			t.Fatalf("the qwen sender heard %+v, want held", rev.Receipt)
		}
	})
	t.Run("a hold on the Qwen side reaches the Claude sender as a held receipt", func(t *testing.T) {
		id, err := fk.Send(ctxT(t), alias, "bypass to qwen", message.ModeBypass)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool { return f.OrigMsgID == id })
		if err != nil {
			t.Fatal(err)
		}
		if f.Status != claude.WireHeld {
			t.Fatalf("receipt = %+v, want held", f)
		}
	})
}

func TestTheBridgeCanBeTurnedOffOrLimited(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"--bridge=false publishes no alias", []string{"--bridge=false"}},
		{"--bridge-only publishes only matching names", []string{"--bridge-only", "other-*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startBinary(t, t.TempDir(), tt.args...)
			newFake(t, g, "work-08", message.ModePrompting)
			q := newQwenPeer(t, g, "qwen-work", message.ModePrompting)
			// One sync runs at start and then every 2 s: after 2.5 s any
			// alias the bridge meant to publish is there.
			time.Sleep(2500 * time.Millisecond)
			ss, err := q.Sessions(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range ss {
				if s.Name == "work-08" {
					t.Fatalf("the Claude session was published on the Qwen side: %+v", s)
				}
			}
			files, _ := filepath.Glob(filepath.Join(g.ConfigDir, "sessions", "*.json"))
			for _, f := range files {
				b, _ := os.ReadFile(f)
				if e, err := claude.ParseEntry(b); err == nil && e.Kind == claude.KindAlias {
					t.Fatalf("an alias worker was started: %+v", e)
				}
			}
		})
	}
}

func TestNoAliasIsStartedUnderTheGatewaysOwnName(t *testing.T) {
	g := startBinary(t, t.TempDir())
	newQwenPeer(t, g, "gateway", message.ModePrompting) // the gateway's own --name
	newQwenPeer(t, g, "qwen-other", message.ModePrompting)
	claudeAlias(t, g, "qwen-other") // the sync has run
	files, _ := filepath.Glob(filepath.Join(g.ConfigDir, "sessions", "*.json"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if e, err := claude.ParseEntry(b); err == nil && e.Kind == claude.KindAlias && e.Name == "gateway" {
			t.Fatalf("an alias worker registered under the gateway's own name: %s", f)
		}
	}
}

// A Claude session's file to a Qwen name cannot go on (Qwen Code takes no
// files): the message is not forwarded without it, and the sender's
// receipt says why.
func TestAFileBridgedToALegWithoutFilesIsRefusedToItsSender(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	q := newQwenPeer(t, g, "qwen-work", message.ModePrompting)
	alias := claudeAlias(t, g, "qwen-work")
	spool := filepath.Join(g.ConfigDir, "file-transfers")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	data := []byte("the notes")
	p := filepath.Join(spool, "notes.txt")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	att := message.Attachment{Path: p, FileName: "notes.txt", FileSize: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	id := uuid.NewString()
	env := claude.Envelope{From: fk.Address(), FromName: "work-08", FromMode: "prompting", Body: "see the notes"}
	if err := fk.SendFrame(ctxT(t), alias, claude.NewUserFrame(fk.Address(), id, env, []message.Attachment{att})); err != nil {
		t.Fatal(err)
	}
	f, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool { return f.OrigMsgID == id && f.Status != claude.WireDelivered })
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := f.Marshal(); !strings.Contains(string(b), "cannot carry files") {
		t.Fatalf("the sender heard %s, want the reason", b)
	}
	for {
		select {
		case ev := <-q.events:
			if ev.Type == message.EventMessage && ev.Message.Body == "see the notes" {
				t.Fatal("the message reached the Qwen session without its file")
			}
			continue
		default:
		}
		break
	}
}

// serve --log-format text is one format in the whole log: an alias
// worker's lines (it writes to serve's stderr) are text too.
func TestAliasWorkersLogInServesFormat(t *testing.T) {
	g := startBinary(t, t.TempDir(), "--log-format", "text")
	newQwenPeer(t, g, "qwen-work", message.ModePrompting)
	claudeAlias(t, g, "qwen-work")
	testutil.Eventually(t, "the alias worker logs", func() bool { return strings.Contains(g.Logs(), "alias=qwen-work") })
	for line := range strings.Lines(g.Logs()) {
		if strings.HasPrefix(line, "{") {
			t.Fatalf("a JSON line in a --log-format text log: %s", line)
		}
	}
}
