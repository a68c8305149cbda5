package qwen_test

import (
	"os"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
	"github.com/sessiongateway/gateway/testkit/peersuite"
)

// TestQwenPeerSuite runs the Qwen leg's peer suite against the
// fake; interop runs the same suite against the real CLI.
func TestQwenPeerSuite(t *testing.T) {
	peersuite.RunQwen(t, fakeBackend{})
}

type fakeBackend struct{}

func (fakeBackend) Start(t *testing.T, w *gatewaytest.World) peersuite.QwenPeer {
	const name = "work-it"
	p := fakeqwen.Start(t, fakeqwen.Config{Name: name, Home: w.QwenHome, RuntimeDir: w.Runtime})
	// The token is in the record only, as a real session's is.
	b, err := os.ReadFile(p.RecordPath())
	if err != nil {
		t.Fatal(err)
	}
	rec, err := qwen.ParseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	return fakePeer{p, name, rec.IPCToken}
}

type fakePeer struct {
	*fakeqwen.Peer
	name  string
	token qwen.Token
}

func (p fakePeer) Name() string                { return p.name }
func (p fakePeer) PID() int                    { return os.Getpid() } // the fake runs in the test process
func (p fakePeer) Inbox() (string, qwen.Token) { return p.SocketPath(), p.token }

func (p fakePeer) WaitMessage(t *testing.T, body string) string {
	t.Helper()
	ev, err := p.Wait(testutil.Context(t, 30*time.Second), 30*time.Second, func(ev message.Event) bool {
		return ev.Type == message.EventMessage && ev.Message != nil && ev.Message.Body == body
	})
	if err != nil {
		t.Fatalf("the fake never got %q: %v", body, err)
	}
	return ev.Message.FromName
}

func (p fakePeer) WaitHeld(t *testing.T, body string) {
	t.Helper()
	if _, err := p.Wait(testutil.Context(t, 30*time.Second), 30*time.Second, func(ev message.Event) bool {
		return ev.Type == message.EventHeld && ev.Held != nil && ev.Held.Message.Body == body
	}); err != nil {
		t.Fatalf("the fake never held %q: %v", body, err)
	}
}
