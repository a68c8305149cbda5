package qwen

import (
	"errors"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
)

func TestGatePolicy(t *testing.T) {
	bypass := func(id string) Inbound { in := msg("a", id, id); in.Frame.FromMode = message.ModeBypass; return in }
	unasserted := func(id string) Inbound { in := msg("a", id, id); in.Frame.FromMode = message.ModeUnknown; return in }
	child := func(id string) Inbound { in := bypass(id); in.Origin = Origin{Kind: AuthChild}; return in }
	tests := []struct {
		name    string
		policy  Policy
		polErr  error
		class   message.Mode
		in      Inbound
		outcome Outcome
		cause   HoldCause
	}{
		{"the same review class is delivered", PolicyUnset, nil, message.ModePrompting, msg("a", "m", "x"), OutcomeDelivered, 0},
		{"another review class is held", PolicyUnset, nil, message.ModePrompting, bypass("m"), OutcomeHeld, CauseModeMismatch},
		{"a sender that asserts no class is held", PolicyUnset, nil, message.ModePrompting, unasserted("m"), OutcomeHeld, CauseNoModeAsserted},
		{"an unknown own class holds everything", PolicyUnset, nil, message.ModeUnknown, msg("a", "m", "x"), OutcomeHeld, CauseModeUnknown},
		{"a child is accepted under parity", PolicyUnset, nil, message.ModeUnknown, child("m"), OutcomeDelivered, 0},
		{"accept wins over parity", PolicyAccept, nil, message.ModePrompting, bypass("m"), OutcomeDelivered, 0},
		{"hold wins over parity", PolicyHold, nil, message.ModePrompting, msg("a", "m", "x"), OutcomeHeld, CauseExplicitSetting},
		{"hold holds a child too", PolicyHold, nil, message.ModePrompting, child("m"), OutcomeHeld, CauseExplicitSetting},
		{"refuse refuses", PolicyRefuse, nil, message.ModePrompting, msg("a", "m", "x"), OutcomeRefused, 0},
		{"an unreadable setting holds", PolicyUnset, errors.New("bad"), message.ModePrompting, msg("a", "m", "x"), OutcomeHeld, CausePolicyUnreadable},
		{"an out-of-range setting holds", Policy(9), nil, message.ModePrompting, msg("a", "m", "x"), OutcomeHeld, CausePolicyUnreadable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, nil)
			r.set(func(r *guardRig) { r.policy, r.polErr, r.class = tt.policy, tt.polErr, tt.class })
			want(t, r.admit(tt.in), tt.outcome, tt.cause)
		})
	}
	t.Run("a refused id stays refused", func(t *testing.T) {
		r := newRig(t, nil)
		r.set(func(r *guardRig) { r.policy = PolicyRefuse })
		r.admit(msg("a", "m", "x"))
		r.set(func(r *guardRig) { r.policy = PolicyAccept })
		want(t, r.admit(msg("a", "m", "y")), OutcomeRepeated, StatusRefused)
	})
	t.Run("policy values parse from their settings", func(t *testing.T) {
		for s, p := range map[string]Policy{"": PolicyUnset, "accept": PolicyAccept, "hold": PolicyHold, "refuse": PolicyRefuse} {
			if got, err := ParsePolicy(s); err != nil || got != p {
				t.Errorf("%q: %v %v", s, got, err)
			}
		}
		if _, err := ParsePolicy("deny"); err == nil {
			t.Error("deny parsed")
		}
		for s, d := range map[string]time.Duration{"1m": time.Minute, "5m": 5 * time.Minute, "10m": 10 * time.Minute, "never": HoldForever, "": 5 * time.Minute, "2h": 5 * time.Minute} {
			if got := ParseHeldExpiry(s); got != d {
				t.Errorf("%q: %v", s, got)
			}
		}
		for m, c := range map[string]message.Mode{"plan": message.ModePrompting, "default": message.ModePrompting, "auto-edit": message.ModeBypass, "auto": message.ModeBypass, "yolo": message.ModeBypass, "x": message.ModeUnknown} {
			if ReviewClassOf(m) != c {
				t.Errorf("%q: %v", m, ReviewClassOf(m))
			}
		}
	})
}

// A hold's reason is said to a person as a sentence, ending in the cause's
// wire name; a cause without a sentence is its wire name alone.
func TestAHoldCauseIsASentenceEndingInItsName(t *testing.T) {
	for _, tt := range []struct {
		cause HoldCause
		want  string
	}{
		{CauseExplicitSetting, "This session holds every inbound message for review (explicit-setting)"},
		{CauseModeMismatch, "The sender's review class (prompting or bypass) is not this session's (mode-mismatch)"},
		{CauseNoModeAsserted, "The sender did not say whether it reviews its actions (no-mode-asserted)"},
		{CauseModeUnknown, "This session's own review class is unknown (mode-unknown)"},
		{CausePolicyUnreadable, "This session's inbound setting could not be read (policy-unreadable)"},
		{HoldCause(0), "cause(0)"},
		{HoldCause(99), "cause(99)"},
	} {
		if got := tt.cause.Sentence(); got != tt.want {
			t.Errorf("%d: %q, want %q", tt.cause, got, tt.want)
		}
	}
}
