package qwen

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
)

func TestGateHoldExpiry(t *testing.T) {
	held := func(id string) Inbound { in := msg("a", id, id); in.Frame.FromMode = message.ModeBypass; return in }
	t.Run("a hold expires after 5 minutes by default, and its id stays expired", func(t *testing.T) {
		r := newRig(t, nil)
		r.admit(held("h1"))
		r.takeReports()
		r.clk.Advance(5*time.Minute - time.Millisecond)
		if got := r.takeReports(); got != nil {
			t.Fatalf("early: %v", got)
		}
		r.clk.Advance(time.Millisecond)
		if got := r.takeReports(); !reflect.DeepEqual(got, []string{"h1:expired"}) {
			t.Fatalf("got %v", got)
		}
		want(t, r.admit(held("h1")), OutcomeRepeated, StatusExpired)
	})
	t.Run("a shorter setting applies to holds already waiting", func(t *testing.T) {
		r := newRig(t, nil)
		r.set(func(r *guardRig) { r.expiry = 10 * time.Minute })
		r.admit(held("h1"))
		r.clk.Advance(2 * time.Minute)
		r.set(func(r *guardRig) { r.expiry = time.Minute })
		r.takeReports()
		if hm := r.g.Held(); len(hm) != 0 {
			t.Fatalf("still held: %+v", hm)
		}
		if got := r.takeReports(); !reflect.DeepEqual(got, []string{"h1:expired"}) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("never means no timer and no expiry", func(t *testing.T) {
		r := newRig(t, nil)
		r.set(func(r *guardRig) { r.expiry = HoldForever })
		r.admit(held("h1"))
		if r.clk.Pending() != 0 {
			t.Fatal("a timer was armed")
		}
		r.clk.Advance(24 * time.Hour)
		hm := r.g.Held()
		if len(hm) != 1 || !hm[0].Expires.IsZero() {
			t.Fatalf("got %+v", hm)
		}
	})
	t.Run("one timer serves every hold", func(t *testing.T) {
		r := newRig(t, nil)
		for i := range 10 {
			r.admit(held(fmt.Sprint("h", i)))
			r.clk.Advance(time.Second)
		}
		if n := r.clk.Pending(); n != 1 {
			t.Fatalf("%d timers", n)
		}
		hm := r.g.Held()
		if !hm[0].Expires.Equal(hm[0].Since.Add(5 * time.Minute)) {
			t.Fatalf("expires %v", hm[0].Expires)
		}
		r.clk.Advance(5 * time.Minute)
		if n := len(r.g.Held()); n != 0 {
			t.Fatalf("%d still held", n)
		}
	})
}

func TestGateDecide(t *testing.T) {
	held := func(id, body string) Inbound {
		in := msg("a", id, body)
		in.Frame.FromMode = message.ModeBypass
		return in
	}
	t.Run("an approved hold is delivered", func(t *testing.T) {
		r := newRig(t, nil)
		r.admit(held("h1", "x"))
		r.takeReports()
		if got := r.g.Decide("h1", true, ""); got != DecideDone {
			t.Fatalf("got %v", got)
		}
		if got := r.takeReports(); !reflect.DeepEqual(got, []string{"h1:delivered"}) || r.drain() != 1 {
			t.Fatalf("reports %v", got)
		}
		if r.clk.Pending() != 0 {
			t.Fatal("the expiry timer outlived the last hold")
		}
	})
	t.Run("a denied hold is denied and its body may be sent again", func(t *testing.T) {
		r := newRig(t, nil)
		r.admit(held("h1", "x"))
		r.g.Decide("h1", false, "")
		want(t, r.admit(held("h2", "x")), OutcomeHeld)
		want(t, r.admit(held("h1", "y")), OutcomeRepeated, StatusDenied)
	})
	t.Run("a denial's reason is what its sender is told", func(t *testing.T) {
		r := newRig(t, nil)
		var got []Report
		r.g.cfg.Report = func(rep Report) { got = append(got, rep) }
		r.admit(held("h1", "x"))
		r.g.Decide("h1", false, "spam")
		f := got[len(got)-1].Frame("/inbox.sock")
		if f.Status != StatusDenied || f.Reason != "spam" || f.OrigMsgID != "h1" {
			t.Fatalf("the sender is told %+v, want denied: spam", f)
		}
	})
	t.Run("a denial without a reason says the status's own words, and a long one is clipped", func(t *testing.T) {
		long := strings.Repeat("x", MaxFrameUnits)
		for _, tt := range []struct{ reason, want string }{
			{"", statusReasons[StatusDenied]},
			{long, long[:maxReportReason]},
		} {
			f := Report{Inbound: held("h1", "x"), Status: StatusDenied, Reason: tt.reason}.Frame("/inbox.sock")
			if f.Reason != tt.want {
				t.Errorf("a %d-byte reason: the sender is told %d bytes", len(tt.reason), len(f.Reason))
			}
		}
	})
	t.Run("an unknown id is gone", func(t *testing.T) {
		r := newRig(t, nil)
		if got := r.g.Decide("nope", true, ""); got != DecideGone {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("an approval that finds the queue full parks the message again where it was", func(t *testing.T) {
		r := newRig(t, func(c *GuardConfig) { c.Limits.Global.Burst = 100 })
		r.admit(held("h1", "x"))
		r.admit(held("h2", "y"))
		for i := range 50 {
			r.admit(msg(fmt.Sprint("s", i), fmt.Sprint("m", i), "z"))
		}
		r.takeReports()
		if got := r.g.Decide("h1", true, ""); got != DecideFailed {
			t.Fatalf("got %v", got)
		}
		if got := r.takeReports(); !reflect.DeepEqual(got, []string{"h1:held"}) {
			t.Fatalf("reports %v", got)
		}
		if hm := r.g.Held(); hm[0].Inbound.Frame.MsgID != "h1" || len(hm) != 2 {
			t.Fatalf("held %+v", hm)
		}
	})
	t.Run("a hold for a session swapped away is misaddressed on release", func(t *testing.T) {
		r := newRig(t, nil)
		r.admit(held("h1", "x"))
		r.set(func(r *guardRig) { r.sid = "s2" })
		r.takeReports()
		if got := r.g.Decide("h1", true, ""); got != DecideGone {
			t.Fatalf("got %v", got)
		}
		if got := r.takeReports(); !reflect.DeepEqual(got, []string{"h1:misaddressed"}) {
			t.Fatalf("reports %v", got)
		}
	})
}

func TestGateReevaluate(t *testing.T) {
	t.Run("a change of our review class releases holds that now match", func(t *testing.T) {
		r := newRig(t, nil)
		b := msg("a", "b1", "x")
		b.Frame.FromMode = message.ModeBypass
		n := msg("b", "n1", "y")
		n.Frame.FromMode = message.ModeUnknown
		r.admit(b)
		r.admit(n)
		r.set(func(r *guardRig) { r.class = message.ModeBypass })
		r.takeReports()
		if got := r.g.Reevaluate(); got != 1 {
			t.Fatalf("released %d", got)
		}
		if got := r.takeReports(); !reflect.DeepEqual(got, []string{"b1:delivered"}) {
			t.Fatalf("reports %v", got)
		}
		if hm := r.g.Held(); len(hm) != 1 || hm[0].Cause != CauseNoModeAsserted {
			t.Fatalf("held %+v", hm)
		}
	})
	t.Run("switching to refuse denies the backlog", func(t *testing.T) {
		r := newRig(t, nil)
		b := msg("a", "b1", "x")
		b.Frame.FromMode = message.ModeBypass
		r.admit(b)
		r.set(func(r *guardRig) { r.policy = PolicyRefuse })
		r.takeReports()
		r.g.Reevaluate()
		if got := r.takeReports(); !reflect.DeepEqual(got, []string{"b1:denied"}) {
			t.Fatalf("reports %v", got)
		}
	})
	t.Run("a revoked controller's waiting message is judged as a peer's", func(t *testing.T) {
		r := newRig(t, nil)
		in := msg("a", "c1", "x")
		in.Frame.FromMode = message.ModeBypass
		in.Origin = Origin{Kind: AuthController, Controller: Controller{ID: "c_00000001"}}
		r.set(func(r *guardRig) { r.policy = PolicyHold })
		want(t, r.admit(in), OutcomeHeld, CauseExplicitSetting)
		r.g.ForgetController("c_00000001")
		r.set(func(r *guardRig) { r.policy = PolicyUnset })
		if got := r.g.Reevaluate(); got != 0 {
			t.Fatal("released under the revoked grant")
		}
		if hm := r.g.Held(); hm[0].Cause != CauseModeMismatch || hm[0].Inbound.Origin.Kind != AuthPeer {
			t.Fatalf("held %+v", hm[0])
		}
	})
}
