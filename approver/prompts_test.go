package approver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// Every goroutine the approver starts is stopped by the end of Run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// promptLeg is a remote-like leg: it raises prompts and records answers.
type promptLeg struct {
	run chan struct{}

	mu        sync.Mutex
	in        chan<- message.Event
	answers   []message.PermissionAnswer
	answerErr error
}

const remoteSession = "session_01abc"

func newPromptLeg() *promptLeg { return &promptLeg{run: make(chan struct{})} }

func (l *promptLeg) Name() message.Protocol { return message.ProtocolRemote }
func (l *promptLeg) Sessions(context.Context) ([]message.Session, error) {
	return []message.Session{{Address: "bridge:" + remoteSession, Protocol: message.ProtocolRemote, Name: "fix-the-bug", SessionID: remoteSession, Reachable: true}}, nil
}
func (l *promptLeg) Send(_ context.Context, m message.Message) (message.Receipt, error) {
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent}, nil
}
func (l *promptLeg) Run(ctx context.Context, in chan<- message.Event) error {
	l.mu.Lock()
	l.in = in
	l.mu.Unlock()
	close(l.run)
	<-ctx.Done()
	return ctx.Err()
}
func (l *promptLeg) Answer(_ context.Context, _ message.PermissionRequest, a message.PermissionAnswer) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answers = append(l.answers, a)
	return l.answerErr
}

func (l *promptLeg) answered() []message.PermissionAnswer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]message.PermissionAnswer(nil), l.answers...)
}

// feed sends evs from the leg and returns the permission events the router
// published for them. A session event after them marks the end: the router
// handles one leg event at a time, in order.
func (l *promptLeg) feed(t *testing.T, r *router.Router, evs ...message.Event) []message.Event {
	t.Helper()
	<-l.run
	_, _, sub := r.Hub().Subscribe(-1)
	defer sub.Close()
	l.mu.Lock()
	in := l.in
	l.mu.Unlock()
	for _, ev := range append(evs, message.Event{Type: message.EventSession}) {
		in <- ev
	}
	var got []message.Event
	for ev := range sub.C {
		switch ev.Type {
		case message.EventSession:
			return got
		case message.EventPermission:
			got = append(got, ev)
		}
	}
	t.Fatalf("subscription ended: %v", sub.Err())
	return nil
}

func prompt(session, request, tool string, input string) message.Event {
	return message.Event{Type: message.EventPermission, Leg: message.ProtocolRemote, Permission: &message.PermissionRequest{
		SessionID: session, Address: "bridge:" + session, RequestID: request, ToolName: tool,
		ToolUseID: "toolu_" + request, Input: json.RawMessage(input), State: message.PermissionPending,
	}}
}

func withdraw(session, request string) message.Event {
	return message.Event{Type: message.EventPermission, Leg: message.ProtocolRemote, Permission: &message.PermissionRequest{
		SessionID: session, RequestID: request, State: message.PermissionCancelled,
	}}
}

var askInput = `{"questions":[{"question":"Which approach?","header":"Approach","multiSelect":false,"options":[{"label":"Option A"},{"label":"Option B"}]},` +
	`{"question":"Which features?","header":"Features","multiSelect":true,"options":[{"label":"Logging"},{"label":"Metrics"}]}]}`

// askPrompt is an AskUserQuestion prompt with its questions decoded, as the
// remote leg publishes it.
func askPrompt(request string) message.Event {
	ev := prompt(remoteSession, request, router.AskUserQuestion, askInput)
	ev.Permission.Questions = []message.Question{
		{Question: "Which approach?", Header: "Approach", Options: []string{"Option A", "Option B"}},
		{Question: "Which features?", Header: "Features", MultiSelect: true, Options: []string{"Logging", "Metrics"}},
	}
	return ev
}

// shortID is the id the router's broker gives a prompt.
func shortID(session, request string) string {
	sum := sha256.Sum256([]byte(session + "\x00" + request))
	return "p" + hex.EncodeToString(sum[:])[:6]
}
