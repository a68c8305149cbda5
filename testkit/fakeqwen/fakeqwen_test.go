package fakeqwen

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/message"
)

func TestTwoFakesFindAndMessageEachOther(t *testing.T) {
	// A space in the path: uds: addresses percent-encode it, as Claude
	// Code's do, and every hop must decode it again.
	root := filepath.Join(t.TempDir(), "with space")
	home, run := filepath.Join(root, "qwen"), filepath.Join(root, "run")
	alice := Start(t, Config{Name: "alice", Home: home, RuntimeDir: run})
	bob := Start(t, Config{Name: "bob", Home: home, RuntimeDir: run})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ss, err := alice.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var to message.Session
	for _, s := range ss {
		if s.Name == "bob" {
			to = s
		}
	}
	if to.Address != bob.Address() || to.SessionID != bob.SessionID() || !strings.Contains(to.Address, "with%20space") {
		t.Fatalf("alice lists %+v, want bob at %s", ss, bob.Address())
	}

	tests := []struct {
		name   string
		mode   message.Mode
		status message.Status
	}{
		{"a prompting message is delivered and bob sees it with alice's name", message.ModePrompting, message.StatusDelivered},
		{"a bypass message to a prompting session is held", message.ModeBypass, message.StatusHeld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := message.Message{ID: uuid.NewString(), To: to.Address, ToSessionID: to.SessionID, ToName: "bob",
				FromName: "alice", Body: "hello " + tt.name, Mode: tt.mode}
			if _, err := alice.Send(ctx, m); err != nil {
				t.Fatal(err)
			}
			_, err := alice.Wait(ctx, 5*time.Second, func(ev message.Event) bool {
				return ev.Receipt != nil && ev.Receipt.MsgID == m.ID && ev.Receipt.Status == tt.status
			})
			if err != nil {
				t.Fatalf("no %s receipt for alice: %v", tt.status, err)
			}
			if tt.status != message.StatusDelivered {
				return
			}
			ev, err := bob.Wait(ctx, 5*time.Second, func(ev message.Event) bool { return ev.Message != nil && ev.Message.Body == m.Body })
			if err != nil || ev.Message.FromName != "alice" {
				t.Fatalf("bob got %+v (%v), want the message from alice", ev.Message, err)
			}
		})
	}
}

func TestARefusingFakeAnswersRefused(t *testing.T) {
	root := t.TempDir()
	home, run := filepath.Join(root, "qwen"), filepath.Join(root, "run")
	alice := Start(t, Config{Name: "alice", Home: home, RuntimeDir: run})
	carol := Start(t, Config{Name: "carol", Home: home, RuntimeDir: run, Inbound: qwen.PolicyRefuse})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := message.Message{ID: uuid.NewString(), To: carol.Address(), ToSessionID: carol.SessionID(), ToName: "carol",
		FromName: "alice", Body: "let me in", Mode: message.ModePrompting}
	if _, err := alice.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Wait(ctx, 5*time.Second, func(ev message.Event) bool {
		return ev.Receipt != nil && ev.Receipt.MsgID == m.ID && ev.Receipt.Status == message.StatusRefused
	}); err != nil {
		t.Fatalf("no refused receipt: %v", err)
	}
}
