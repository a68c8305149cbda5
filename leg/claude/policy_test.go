package claude

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

func TestModeParityDecidesWhatIsHeld(t *testing.T) {
	tests := []struct {
		name   string
		ours   message.Mode
		sender string // from-mode; "" sends no from-mode (unattested)
		child  bool   // present our child token
		want   message.EventType
	}{
		{"a prompting gateway delivers a prompting sender", message.ModePrompting, "prompting", false, message.EventMessage},
		{"a prompting gateway holds a bypass sender", message.ModePrompting, "bypass", false, message.EventHeld},
		{"a prompting gateway delivers an unattested sender", message.ModePrompting, "", false, message.EventMessage},
		{"a bypass gateway delivers a bypass sender", message.ModeBypass, "bypass", false, message.EventMessage},
		{"a bypass gateway holds a prompting sender", message.ModeBypass, "prompting", false, message.EventHeld},
		{"a bypass gateway holds an unattested sender", message.ModeBypass, "", false, message.EventHeld},
		{"our own child is delivered whatever its mode (self-sent)", message.ModePrompting, "bypass", true, message.EventMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startRig(t, Config{Mode: tt.ours})
			sender := listenSock(t, r.socks)
			id := uuid.NewString()
			f := NewUserFrame(sender.addr, id, Envelope{From: sender.addr, FromName: "tester", FromMode: tt.sender, Body: "parity " + tt.name}, nil)
			if tt.sender == "" {
				// Unattested: the text carries no envelope at all.
				f.Message.Content = "parity " + tt.name
			}
			lines := [][]byte{marshal(t, f)}
			if tt.child {
				lines = append([][]byte{authLine(t, r.p.ChildToken())}, lines...)
			}
			dial(t, r.p.SocketPath(), lines...)
			ev := r.next(t, func(ev message.Event) bool {
				return (ev.Type == message.EventMessage && ev.Message.ID == id) || (ev.Type == message.EventHeld && ev.Held.Message.ID == id)
			})
			if ev.Type != tt.want {
				t.Fatalf("event %s, want %s", ev.Type, tt.want)
			}
			if tt.want == message.EventHeld {
				sender.waitFrame(t, func(f Frame) bool { return f.OrigMsgID == id && f.Status == WireHeld })
			}
		})
	}
}

func TestHoldPolicyHoldsSameModeMessages(t *testing.T) {
	r := startRig(t, Config{Inbound: PolicyHold})
	sender := listenSock(t, r.socks)
	id, b := sender.userFrame(t, "prompting", "same mode, still held")
	dial(t, r.p.SocketPath(), authLine(t, r.p.peerToken), b)
	ev := r.next(t, func(ev message.Event) bool { return ev.Type != message.EventSession })
	if ev.Type != message.EventHeld || ev.Held.Message.ID != id {
		t.Fatalf("event = %+v, want %s held", ev, id)
	}
	f := sender.waitFrame(t, func(f Frame) bool { return f.Action == ActionPeerMessageStatus })
	if f.Status != WireHeld || f.OrigMsgID != id || f.From != r.p.Address() {
		t.Fatalf("receipt = %+v, want held for %s from %s", f, id, r.p.Address())
	}
	t.Run("denying it says denied, with the typed reason", func(t *testing.T) {
		if err := r.p.Decide(testutil.Context(t, 10*time.Second), id, false, ""); err != nil {
			t.Fatal(err)
		}
		ev := r.next(t, isType(message.EventDrop))
		if ev.Drop.MsgID != id || ev.Drop.Reason != message.DropDenied || message.DropDenied.String() != "denied" {
			t.Fatalf("drop = %+v", ev.Drop)
		}
		sender.waitFrame(t, func(f Frame) bool { return f.Status == WireDenied && f.OrigMsgID == id })
	})
}

func TestAnUnknownInboundPolicyNamesEveryOneIncludingTheDefault(t *testing.T) {
	_, err := ParsePolicy("nope")
	for _, want := range []string{"parity", "accept", "hold", "refuse"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePolicy(nope) = %v: does not name %s", err, want)
		}
	}
}
