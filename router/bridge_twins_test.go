package router

import (
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/message"
)

// Two Qwen sessions of one process share its inbox address and, here, a
// name. The Claude alias of the first was published as "twin" while it was
// alone; when the second joined, a sync retired that alias (both are
// "twin-REF" now), and what its worker accepted before it stopped is
// still for the session it stood for: the message names "twin" and that
// session's id. The id, not the shared name, picks the session.
func TestAnAliasMessageReachesTheSessionItsIDPinsAmongTwins(t *testing.T) {
	first := message.Session{Address: sharedInbox, Protocol: message.ProtocolQwen, Name: "twin", SessionID: "5d0d1c8e-0000-4000-8000-0000000000f1", PID: 77}
	second := message.Session{Address: sharedInbox, Protocol: message.ProtocolQwen, Name: "twin", SessionID: "5d0d1c8e-0000-4000-8000-0000000000f2", PID: 77}
	sender := message.Session{Address: "uds:/tmp/cc-socks/30.sock", Protocol: message.ProtocolClaude, Name: "lead", SessionID: "c-lead"}
	tests := []struct {
		name      string
		qwen      []message.Session
		toName    string
		toSession string
		want      message.Session // zero: refused, not forwarded
		refusal   string          // what the refusal says
	}{
		{"a retiring alias's message reaches the first twin its id pins", []message.Session{first, second}, "twin", first.SessionID, first, ""},
		{"a retiring alias's message reaches the second twin its id pins", []message.Session{first, second}, "twin", second.SessionID, second, ""},
		{"the id wins whichever twin is listed first", []message.Session{second, first}, "twin", first.SessionID, first, ""},
		{"a NAME-REF alias's message reaches the twin its id pins", []message.Session{first, second}, "twin-" + addressing.Ref(second.SessionID), second.SessionID, second, ""},
		{"an id no session has falls back to a name one session has (a Qwen alias's frame names the alias's own id)", []message.Session{alpha, beta}, "beta", "the-alias-own-id", beta, ""},
		{"a name two sessions share, with no id to pin one, is refused as ambiguous", []message.Session{first, second}, "twin", "", message.Session{}, `ambiguous name "twin"`},
		{"a name two sessions share, with an id neither has, is refused as ambiguous", []message.Session{first, second}, "twin", "the-alias-own-id", message.Session{}, `ambiguous name "twin"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := claudeLeg(sender)
			qw := qwenLeg(tt.qwen...)
			runBridge(t, Config{}, cl, qw)
			cl.Emit(t, message.Event{Type: message.EventMessage, Leg: message.ProtocolClaude, Message: &message.Message{
				ID: "m", From: sender.Address, FromName: "lead", Body: "hi", Mode: message.ModePrompting, Protocol: message.ProtocolClaude,
				AliasOf: sharedInbox, ToName: tt.toName, ToSessionID: tt.toSession}})
			waitAny(cl, qw)
			sent, relayed := qw.SentAs(), cl.Relayed()
			if tt.want.SessionID == "" {
				if len(sent) != 0 {
					t.Fatalf("forwarded to %+v; want no guess", sent)
				}
				if len(relayed) != 1 || relayed[0].Status != message.StatusFailed || !strings.Contains(relayed[0].Reason, tt.refusal) {
					t.Fatalf("the sender was told %+v; want failed, saying %q", relayed, tt.refusal)
				}
				return
			}
			if len(relayed) != 0 {
				t.Fatalf("the sender was told %+v", relayed)
			}
			if len(sent) != 1 || sent[0].ToSessionID != tt.want.SessionID || sent[0].To != sharedInbox {
				t.Fatalf("forwarded %+v, want one message pinned to %s", sent, tt.want.SessionID)
			}
		})
	}
}
