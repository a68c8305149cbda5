package legtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/sessiongateway/gateway/message"
)

// Prompt is a pending permission prompt for tool, as the remote leg
// publishes it for session.
func Prompt(session, request, tool string, input string) message.Event {
	return message.Event{Type: message.EventPermission, Leg: message.ProtocolRemote, Permission: &message.PermissionRequest{
		SessionID: session, Address: "bridge:" + session, RequestID: request, ToolName: tool,
		ToolUseID: "toolu_" + request, Input: json.RawMessage(input), State: message.PermissionPending,
	}}
}

// Withdraw is the remote leg saying request was cancelled before anyone
// answered it.
func Withdraw(session, request string) message.Event {
	return message.Event{Type: message.EventPermission, Leg: message.ProtocolRemote, Permission: &message.PermissionRequest{
		SessionID: session, RequestID: request, State: message.PermissionCancelled,
	}}
}

// AskInput is an AskUserQuestion tool input with two questions, the second
// multi-select.
const AskInput = `{"questions":[{"question":"Which approach?","header":"Approach","multiSelect":false,"options":[{"label":"Option A"},{"label":"Option B"}]},` +
	`{"question":"Which features?","header":"Features","multiSelect":true,"options":[{"label":"Logging"},{"label":"Metrics"}]}]}`

// AskPrompt is an AskUserQuestion prompt on SessionID with AskInput's
// questions decoded, as the remote leg publishes it. The tool name is
// spelled here because this package may not import the router that names it.
func AskPrompt(request string) message.Event {
	ev := Prompt(SessionID, request, "AskUserQuestion", AskInput)
	ev.Permission.Questions = []message.Question{
		{Question: "Which approach?", Header: "Approach", Options: []string{"Option A", "Option B"}},
		{Question: "Which features?", Header: "Features", MultiSelect: true, Options: []string{"Logging", "Metrics"}},
	}
	return ev
}

// ShortID is the id the router's broker gives a prompt: the first six hex
// digits of the SHA-256 of session and request, after a "p".
func ShortID(session, request string) string {
	sum := sha256.Sum256([]byte(session + "\x00" + request))
	return "p" + hex.EncodeToString(sum[:])[:6]
}
