package remote

import (
	"context"
	"errors"
	"testing"

	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

func TestAnAnswerToAPromptSettledElsewhereIsRefusedNotPosted(t *testing.T) {
	prompt := func(rid string) string {
		return `{"type":"control_request","uuid":"p-` + rid + `","request_id":"` + rid + `","request":{"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"t-` + rid + `","input":{}}}`
	}
	tests := []struct {
		name    string
		then    string // what the stream shows after the prompt
		refused bool
		state   message.PermissionState
	}{
		{"answered from the web", `{"type":"control_response","uuid":"web","response":{"subtype":"success","request_id":"r1","response":{"behavior":"deny","message":"no"}}}`, true, message.PermissionAnswered},
		{"withdrawn by the session", `{"type":"control_cancel_request","uuid":"c1","request_id":"r1"}`, true, message.PermissionCancelled},
		{"answered by us", `{"type":"control_response","uuid":"` + answerUUID("session_01a", "r1") + `","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow"}}}`, false, ""},
		{"still open", "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &stubAPI{}
			l := newTestLeg(t, api, "session_01a")
			f := &follow{prompts: newPrompts(), assistant: map[string]wire.Assistant{}}
			l.links["session_01a"] = f
			var req message.PermissionRequest
			for _, ev := range l.translate("session_01a", f, stream.Update{Message: decodeT(t, prompt("r1"))}) {
				if ev.Type == message.EventPermission {
					req = *ev.Permission
				}
			}
			if tt.then != "" {
				l.translate("session_01a", f, stream.Update{Message: decodeT(t, tt.then)})
			}
			err := l.Answer(context.Background(), req, message.PermissionAnswer{Behavior: message.BehaviorAllow})
			var se *message.PromptSettledError
			if got := errors.As(err, &se); got != tt.refused {
				t.Fatalf("Answer = %v, want refused %v", err, tt.refused)
			}
			if tt.refused {
				if se.State != tt.state || !errors.Is(err, message.ErrPromptSettled) || len(api.posts) != 0 {
					t.Fatalf("refused as %+v with %d posts, want %s and nothing posted", se, len(api.posts), tt.state)
				}
				if tt.state == message.PermissionAnswered && (se.Behavior != message.BehaviorDeny || se.By != "remote") {
					t.Fatalf("refused as %+v, want the web's deny", se)
				}
			} else if err != nil || len(api.posts) != 1 {
				t.Fatalf("Answer = %v with %d posts, want it posted", err, len(api.posts))
			}
		})
	}
}
