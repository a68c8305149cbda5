package eventfmt

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

const remoteSID = "session_01abc"

func remoteEvent(session, kind, msgID, text string, final bool) message.Event {
	return message.Event{Type: message.EventRemote, Leg: message.ProtocolRemote, Remote: &message.RemoteEvent{
		SessionID: session, Address: "bridge:" + session, Kind: kind, MessageID: msgID, Text: text, Final: final}}
}

// timeStamp is the clock time the human form starts a line with.
var timeStamp = regexp.MustCompile(`\d\d:\d\d:\d\d`)

func TestTranscriptStreamsBySuffix(t *testing.T) {
	tests := []struct {
		name   string
		events []message.Event
		want   string
	}{
		{"growing copies print only what is new",
			[]message.Event{remoteEvent(remoteSID, "assistant", "m1", "a", false), remoteEvent(remoteSID, "assistant", "m1", "ab", false), remoteEvent(remoteSID, "assistant", "m1", "abc", true)},
			"T assistant: abc\n"},
		{"a replaced content is printed whole again",
			[]message.Event{remoteEvent(remoteSID, "assistant", "m1", "draft", false), remoteEvent(remoteSID, "assistant", "m1", "final", true)},
			"T assistant: draft\nT assistant: final\n"},
		{"a message interrupted by another event continues on its own line",
			[]message.Event{remoteEvent(remoteSID, "assistant", "m1", "one", false), remoteEvent(remoteSID, "user", "", "hi", false), remoteEvent(remoteSID, "assistant", "m1", "one two", true)},
			"T assistant: one\nT user: hi\nT assistant: … two\n"},
		{"a copy after the final one prints nothing",
			[]message.Event{remoteEvent(remoteSID, "assistant", "m1", "x", true), remoteEvent(remoteSID, "assistant", "m1", "x", true)},
			"T assistant: x\n"},
		{"control messages are left to permission events",
			[]message.Event{remoteEvent(remoteSID, "control_request", "", "", false)},
			""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			p := NewTranscript(&b, nil)
			for _, ev := range tt.events {
				p.Event(ev)
			}
			p.EndLine()
			got := timeStamp.ReplaceAllString(b.String(), "T")
			if got != tt.want {
				t.Fatalf("printed %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTranscriptShowsAPromptOnce(t *testing.T) {
	var b bytes.Buffer
	p := NewTranscript(&b, nil)
	ev := message.Event{Type: message.EventPermission, Permission: &message.PermissionRequest{ID: "p1", SessionID: remoteSID,
		ToolName: "Bash", Input: []byte(`{"command":"ls"}`), State: message.PermissionPending}}
	p.Event(ev)
	p.Event(ev)
	if got := timeStamp.ReplaceAllString(b.String(), "T"); got != "T permission p1 from "+remoteSID+": Bash ls\n" {
		t.Fatalf("printed %q", got)
	}
}
