package approver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"go.uber.org/goleak"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/testkit/promptleg"
)

// Every goroutine the approver starts is stopped by the end of Run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const remoteSession = promptleg.SessionID

// promptLeg is the shared remote fixture, with the two things these tests
// ask of it by name.
type promptLeg struct{ *promptleg.Leg }

func newPromptLeg() promptLeg { return promptLeg{promptleg.New()} }

func (l promptLeg) answered() []message.PermissionAnswer { return l.Answers() }

// feed sends evs from the leg and returns the permission events the router
// published for them. A session event after them marks the end: the router
// handles one leg event at a time, in order.
func (l promptLeg) feed(t *testing.T, r *router.Router, evs ...message.Event) []message.Event {
	t.Helper()
	<-l.Started()
	_, _, sub := r.Hub().Subscribe(-1)
	defer sub.Close()
	l.Raise(append(evs, message.Event{Type: message.EventSession})...)
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
