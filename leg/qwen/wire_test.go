package qwen

import (
	"reflect"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

func TestWireTables(t *testing.T) {
	t.Run("every status round-trips through its wire spelling", func(t *testing.T) {
		for s := StatusHeld; s <= StatusDropped; s++ {
			got, err := ParseStatus(s.String())
			if err != nil || got != s {
				t.Errorf("%v: %v %v", s, got, err)
			}
		}
	})
	t.Run("every drop reason round-trips through its wire spelling", func(t *testing.T) {
		for _, r := range []message.DropReason{message.DropRateLimited, message.DropDuplicate, message.DropQueueFull} {
			got, err := ParseDropReason(r.String())
			if err != nil || got != r {
				t.Errorf("%v: %v %v", r, got, err)
			}
		}
		if _, err := ParseDropReason("hop-loop"); err == nil {
			t.Error("hop-loop parsed")
		}
	})
	t.Run("every other named value has its own spelling", func(t *testing.T) {
		got := []string{
			LineAuth.String(), LineUser.String(), LineControl.String(),
			AuthPeer.String(), AuthChild.String(), AuthController.String(),
			PolicyUnset.String(), PolicyAccept.String(), PolicyHold.String(), PolicyRefuse.String(),
			CauseExplicitSetting.String(), CauseModeMismatch.String(), CauseNoModeAsserted.String(), CauseModeUnknown.String(), CausePolicyUnreadable.String(),
			OutcomeDelivered.String(), OutcomeHeld.String(), OutcomeDropped.String(), OutcomeRefused.String(), OutcomeRepeated.String(), OutcomeMisaddressed.String(), OutcomeExpired.String(),
			VerdictLive.String(), VerdictDead.String(), VerdictMisnamed.String(), VerdictForeign.String(),
			ReachAlive.String(), ReachDead.String(), ReachUnknown.String(),
			DecideDone.String(), DecideGone.String(), DecideFailed.String(),
		}
		want := []string{"auth", "user", "control", "peer", "own-process", "controller", "unset", "accept", "hold", "refuse",
			"explicit-setting", "mode-mismatch", "no-mode-asserted", "mode-unknown", "policy-unreadable",
			"delivered", "held", "dropped", "refused", "repeated", "misaddressed", "expired",
			"live", "dead", "misnamed", "foreign", "alive", "dead", "unknown", "done", "gone", "failed"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("out-of-range values print as numbers, not as a neighbour", func(t *testing.T) {
		if Status(0).String() != "status(0)" || Status(99).String() != "status(99)" || message.DropReason(0).String() != "drop(0)" {
			t.Fatalf("got %s %s %s", Status(0), Status(99), message.DropReason(0))
		}
		if PriorityNext.String() != "next" || Priority(7).String() != "priority(7)" {
			t.Fatalf("got %s %s", PriorityNext, Priority(7))
		}
	})
}
