package interop

import (
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/interop/qwencli"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
	"github.com/sessiongateway/gateway/testkit/fakeopenai"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
	"github.com/sessiongateway/gateway/testkit/peersuite"
)

// The peer suites (testkit/peersuite) against the real CLIs;
// testkit/fakeclaude and testkit/fakeqwen run the same suites against the
// fakes.

func TestClaudePeerSuite(t *testing.T) {
	needInterop(t)
	peersuite.RunClaude(t, realClaude{})
}

func TestQwenPeerSuite(t *testing.T) {
	needQwen(t)
	peersuite.RunQwen(t, realQwen{})
}

type realClaude struct{}

func (realClaude) Start(t *testing.T, w *gatewaytest.World, name string) peersuite.ClaudePeer {
	model := fakeanthropic.Start(t, nil)
	return realClaudePeer{startClaude(t, w, model, name), model, map[string]bool{}}
}

// realClaudePeer is a real `claude -p` stream-json session whose model is
// a loopback fake answering "ok".
type realClaudePeer struct {
	*claudecli.Session
	model   *fakeanthropic.Server
	decided map[string]bool // hold ids already decided, so each check finds its own
}

func (p realClaudePeer) WaitTurn(t *testing.T, body string) claude.Envelope {
	t.Helper()
	req, err := p.model.WaitContains(testutil.Context(t, 60*time.Second), body)
	if err != nil {
		t.Fatalf("the real session never started a turn with %q: %v", body, err)
	}
	env, err := envelopeAround(req.LastUser().Text(), body)
	if err != nil {
		t.Fatalf("the turn's text has no envelope around %q (%v): %s", body, err, req.LastUser().Text())
	}
	return env
}

func (p realClaudePeer) WaitHeld(t *testing.T, _, _ string) (string, func()) {
	t.Helper()
	// The stream-json hold event names neither the frame's msg_id nor its
	// body; the checks hold one message at a time, so the first hold not yet
	// decided is this one.
	h, err := p.WaitHold(testutil.Context(t, 30*time.Second), func(h claudecli.Hold) bool { return h.State == "held" && !p.decided[h.HoldID] })
	if err != nil {
		t.Fatalf("the real session never reported a hold: %v", err)
	}
	p.decided[h.HoldID] = true
	return h.FromName, func() {
		if _, err := p.DecideHold(testutil.Context(t, 30*time.Second), h.HoldID, false); err != nil {
			t.Fatal(err)
		}
	}
}

// envelopeAround parses the <cross-session-message> element whose body
// holds body out of a turn's text.
func envelopeAround(text, body string) (claude.Envelope, error) {
	const open, end = "<cross-session-message", "</cross-session-message>"
	i := strings.Index(text, body)
	if i < 0 {
		return claude.Envelope{}, claude.ErrNotEnvelope
	}
	start := strings.LastIndex(text[:i], open)
	stop := strings.Index(text[i:], end)
	if start < 0 || stop < 0 {
		return claude.Envelope{}, claude.ErrNotEnvelope
	}
	return claude.ParseEnvelope(text[start : i+stop+len(end)])
}

type realQwen struct{}

func (realQwen) Start(t *testing.T, w *gatewaytest.World) peersuite.QwenPeer {
	model := fakeopenai.Start(t, nil)
	return realQwenPeer{startQwenTUI(t, w, model, qwencli.ModeDefault), model}
}

// realQwenPeer is a real Qwen Code TUI in the default (prompting) approval
// mode whose model is a loopback fake answering "ok".
type realQwenPeer struct {
	*qwencli.Session
	model *fakeopenai.Server
}

func (p realQwenPeer) Inbox() (string, qwen.Token) {
	return p.IPCPath(), qwen.Token(string(p.IPCToken()))
}

func (p realQwenPeer) WaitMessage(t *testing.T, body string) string {
	t.Helper()
	req, err := p.model.WaitContains(testutil.Context(t, 60*time.Second), body)
	if err != nil {
		t.Fatalf("the real session never passed %q to its model: %v", body, err)
	}
	// <cross_session_message from="<inbox>" name="<sender>">\n<body>
	text := req.LastUser().Text()
	i := strings.Index(text, ">\n"+body)
	start := strings.LastIndex(text[:max(i, 0)], "<cross_session_message ")
	if i < 0 || start < 0 {
		t.Fatalf("the model's text has no envelope around %q: %s", body, text)
	}
	_, after, ok := strings.Cut(text[start:i], ` name="`)
	name, _, ok2 := strings.Cut(after, `"`)
	if !ok || !ok2 {
		t.Fatalf("the envelope shows no name: %s", text[start:i])
	}
	return name
}

func (p realQwenPeer) WaitHeld(t *testing.T, _ string) {
	t.Helper()
	waitScreen(t, p.Session, "Held a message from another session")
}
