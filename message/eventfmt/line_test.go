package eventfmt

import (
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
)

func TestLine(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	tests := []struct {
		name string
		ev   message.Event
		want string // "" means not printed
	}{
		{"a streamed copy that is not final is not printed",
			message.Event{Time: at, Remote: &message.RemoteEvent{Address: "bridge:s1", Kind: "assistant", Text: "Hel"}}, ""},
		{"a final assistant message is printed with its session",
			message.Event{Time: at, Remote: &message.RemoteEvent{Address: "bridge:s1", Kind: "assistant", Text: "Hello", Final: true}}, "bridge:s1 assistant: Hello"},
		{"a result is printed",
			message.Event{Time: at, Remote: &message.RemoteEvent{Address: "bridge:s1", Kind: "result", Text: "done", Final: true}}, "bridge:s1 result: done"},
		{"a pending prompt says how to answer it",
			message.Event{Time: at, Permission: &message.PermissionRequest{ID: "p1a2b3c", Address: "bridge:s1", ToolName: "Bash",
				Input: []byte(`{"command":"ls"}`), State: message.PermissionPending}}, "gateway allow p1a2b3c"},
		{"an answered prompt says by whom",
			message.Event{Time: at, Permission: &message.PermissionRequest{ID: "p1", State: message.PermissionAnswered,
				Answer: &message.PermissionAnswer{Behavior: "deny", By: "cli"}}}, "answered: deny by cli"},
		{"a withdrawn prompt says so",
			message.Event{Time: at, Permission: &message.PermissionRequest{ID: "p1", Address: "bridge:s1", State: message.PermissionCancelled}}, "withdrawn by bridge:s1"},
		{"a message without a sender's name shows its address",
			message.Event{Time: at, Message: &message.Message{From: "uds:/tmp/cc-socks/7.sock", ToName: "review", Body: "hi", Attested: true}}, "message from uds:/tmp/cc-socks/7.sock -> review: hi"},
		{"a message says to whom it went, by name",
			message.Event{Time: at, Message: &message.Message{FromName: "work-08", To: "uds:/tmp/cc-socks/9.sock", ToName: "review", Body: "hi", Attested: true}}, "message from work-08 -> review: hi"},
		{"a message to a session without a name shows its address",
			message.Event{Time: at, Message: &message.Message{FromName: "work-08", To: "uds:/tmp/cc-socks/9.sock", Body: "hi", Attested: true}}, "message from work-08 -> uds:/tmp/cc-socks/9.sock: hi"},
		{"a message to an alias without a name shows the session it stands for",
			message.Event{Time: at, Message: &message.Message{FromName: "work-08", AliasOf: "bridge:s1", Body: "hi", Attested: true}}, "message from work-08 -> bridge:s1: hi"},
		{"a message with no recipient came to the gateway",
			message.Event{Time: at, Message: &message.Message{FromName: "work-08", Body: "hi", Attested: true}}, "message from work-08 -> the gateway: hi"},
		{"an unattested message says so",
			message.Event{Time: at, Message: &message.Message{FromName: "w", ToName: "gw", Body: "hi"}}, "message from w -> gw (unattested): hi"},
		{"a controller's message names the grant",
			message.Event{Time: at, Message: &message.Message{FromName: "voice", ToName: "gw", Body: "hi", Attested: true, Controller: "voice front-end"}}, "message from voice -> gw (controller voice front-end): hi"},
		{"a link change names the session and the error",
			message.Event{Time: at, Link: &message.Link{SessionID: "s1", State: message.LinkGaveUp, Error: "401"}}, "bridge:s1 link gave_up: 401"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Line(tt.ev)
			if tt.want == "" {
				if got != "" {
					t.Errorf("Line = %q, want nothing", got)
				}
				return
			}
			if !strings.Contains(got, tt.want) || !strings.HasPrefix(got, "03:04:05 ") {
				t.Errorf("Line = %q, want the time and %q", got, tt.want)
			}
		})
	}
}
