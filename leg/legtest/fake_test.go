package legtest_test

import (
	"context"
	"testing"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
)

var work = message.Session{Address: "uds:/tmp/cc-socks/10.sock", Protocol: message.ProtocolClaude, Name: "work",
	SessionID: "s-a", PID: 10, Reachable: true}

// fake is a Fake with every ability With knows switched on, and one
// session that says something when asked.
func fake(t *testing.T) legtest.Subject {
	f := legtest.New(message.ProtocolClaude, work)
	f.SettleAfter = 1
	f.OnSend = func(_ context.Context, m message.Message) (message.Receipt, error) {
		if m.To != work.Address {
			return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: "no such session"}, nil
		}
		return message.Receipt{MsgID: m.ID, Status: message.StatusSent}, nil
	}
	return legtest.Subject{
		Leg: f.With(legtest.Settles | legtest.CarriesFiles | legtest.HostsAliases | legtest.Holds),
		Inbound: func(t *testing.T) {
			f.Emit(t, message.Event{Type: message.EventMessage, Message: &message.Message{ID: "m-1", From: work.Address, Body: "hi"}})
		},
	}
}

func TestFakeKeepsTheLegContract(t *testing.T) { legtest.Run(t, fake) }

// With gives the router exactly the abilities asked for, whichever set.
func TestWithSwitchesOnExactlyTheAbilitiesAsked(t *testing.T) {
	type noticeCounter interface{ NoticesLost() uint64 }
	f := legtest.New(message.ProtocolClaude, work)
	for set := range legtest.Ability(32) {
		l := f.With(set)
		_, settles := l.(leg.Settler)
		_, carries := l.(leg.FileCarrier)
		_, hosts := l.(leg.AliasHost)
		_, holds := l.(leg.Holder)
		_, counts := l.(noticeCounter)
		got := [...]bool{settles, carries, hosts, holds, counts}
		for i, want := range [...]legtest.Ability{legtest.Settles, legtest.CarriesFiles, legtest.HostsAliases, legtest.Holds, legtest.CountsNotices} {
			if got[i] != (set&want != 0) {
				t.Errorf("With(%05b): ability %05b is %v", set, want, got[i])
			}
		}
		if _, ok := l.(leg.Claimer); !ok {
			t.Errorf("With(%05b) lost the fake's own abilities", set)
		}
	}
}

// prompter is a PromptLeg whose session raises a prompt when asked.
func prompter(t *testing.T) legtest.Subject {
	l := legtest.NewPromptLeg()
	return legtest.Subject{
		Leg:     l,
		Inbound: func(t *testing.T) { l.Raise(legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`)) },
		Unknown: "bridge:session_01nobody",
	}
}

func TestPromptLegKeepsTheLegContract(t *testing.T) { legtest.Run(t, prompter) }
