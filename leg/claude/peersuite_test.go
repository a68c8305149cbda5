package claude_test

import (
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
	"github.com/sessiongateway/gateway/testkit/peersuite"
)

// TestClaudePeerSuite runs the Claude leg's peer suite against
// the fake; interop runs the same suite against the real CLI.
func TestClaudePeerSuite(t *testing.T) {
	peersuite.RunClaude(t, fakeBackend{})
}

type fakeBackend struct{}

func (fakeBackend) Start(t *testing.T, w *gatewaytest.World, name string) peersuite.ClaudePeer {
	return fakePeer{fakeclaude.Start(t, fakeclaude.Config{Name: name, ConfigDir: w.ConfigDir, RuntimeDir: w.Runtime})}
}

type fakePeer struct{ *fakeclaude.Peer }

func (p fakePeer) SocketPath() string {
	path, _ := addressing.SocketOf(p.Address())
	return path
}

func (p fakePeer) WaitTurn(t *testing.T, body string) claude.Envelope {
	t.Helper()
	r, err := p.WaitReceived(testutil.Context(t, 30*time.Second), func(r fakeclaude.Received) bool {
		return !r.Held && r.Content.Envelope.Body == body
	})
	if err != nil {
		t.Fatalf("the fake never took %q in: %v", body, err)
	}
	return r.Content.Envelope
}

func (p fakePeer) WaitHeld(t *testing.T, id, body string) (string, func()) {
	t.Helper()
	r, err := p.WaitReceived(testutil.Context(t, 30*time.Second), func(r fakeclaude.Received) bool {
		return r.Held && r.Frame.MsgID == id
	})
	if err != nil {
		t.Fatalf("the fake never held %s: %v", id, err)
	}
	if r.Content.Envelope.Body != body {
		t.Errorf("the fake held %q, want %q", r.Content.Envelope.Body, body)
	}
	return r.Content.Envelope.FromName, func() { p.Decide(testutil.Context(t, 10*time.Second), id, false) }
}
