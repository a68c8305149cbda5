package qwen

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

// gateRig is a gate for tests: one session "s1" in the prompting class,
// receipts and drops recorded as "msgId:status".
type gateRig struct {
	g   *Gate
	clk *clock.FakeClock

	mu      sync.Mutex
	policy  Policy
	polErr  error
	class   message.Mode
	expiry  time.Duration
	sid     string
	reports []string
	drops   []string
}

func newRig(t *testing.T, edit func(*Config)) *gateRig {
	t.Helper()
	r := &gateRig{clk: clock.NewFakeClock(time.Time{}), class: message.ModePrompting, sid: "s1"}
	cfg := Config{
		Clock: r.clk,
		Policy: func(string) (Policy, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.policy, r.polErr
		},
		ReviewClass: func(string) message.Mode { r.mu.Lock(); defer r.mu.Unlock(); return r.class },
		HeldExpiry:  func(string) time.Duration { r.mu.Lock(); defer r.mu.Unlock(); return r.expiry },
		SessionID:   func() string { r.mu.Lock(); defer r.mu.Unlock(); return r.sid },
		Report: func(rep Report) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.reports = append(r.reports, rep.Inbound.Frame.MsgID+":"+rep.Status.String())
		},
		Dropped: func(in Inbound, d DropReason) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.drops = append(r.drops, in.Frame.MsgID+":"+d.String())
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	r.g = NewGate(cfg)
	t.Cleanup(r.g.Shutdown)
	return r
}

func (r *gateRig) set(f func(r *gateRig)) { r.mu.Lock(); defer r.mu.Unlock(); f(r) }

func (r *gateRig) takeReports() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reports
	r.reports = nil
	return out
}

func (r *gateRig) takeDrops() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.drops
	r.drops = nil
	return out
}

// msg is a prompting peer's message from sender with id and body.
func msg(sender, id, body string) Inbound {
	return Inbound{
		Frame:  UserFrame{MsgID: id, From: "/socks/" + sender + ".sock", FromMode: message.ModePrompting, ToSessionID: "s1", Content: body},
		Origin: Origin{Kind: AuthPeer},
	}
}

func (r *gateRig) admit(in Inbound) Decision { return r.g.Admit(in) }

func (r *gateRig) drain() int {
	n := 0
	for {
		select {
		case <-r.g.Deliveries():
			n++
		default:
			return n
		}
	}
}

func want(t *testing.T, got Decision, outcome Outcome, extra ...any) {
	t.Helper()
	if got.Outcome != outcome {
		t.Fatalf("outcome %v (%+v), want %v", got.Outcome, got, outcome)
	}
	for _, e := range extra {
		switch e := e.(type) {
		case DropReason:
			if got.Drop != e {
				t.Fatalf("drop %v, want %v", got.Drop, e)
			}
		case HoldCause:
			if got.Cause != e {
				t.Fatalf("cause %v, want %v", got.Cause, e)
			}
		case Status:
			if got.Receipt != e {
				t.Fatalf("receipt %v, want %v", got.Receipt, e)
			}
		}
	}
}

func TestDefaultLimitsAreQwenCodes(t *testing.T) {
	want := Limits{SenderBurst: 30, SenderRefillPerSecond: 0.5, GlobalBurst: 32, GlobalRefillPerSecond: 1,
		DedupWindow: 30 * time.Second, MaxTrackedSenders: 256, MaxSettled: 512, MaxHeld: 50, MaxQueued: 50}
	if got := DefaultLimits(); got != want {
		t.Fatalf("got %+v", got)
	}
	if got := NewGate(Config{}).Limits(); got != want {
		t.Fatalf("zero limits became %+v", got)
	}
	if d := want.burstWindow(); d != time.Minute {
		t.Fatalf("burst window %v", d)
	}
}

type verifierFunc func(string) (Controller, bool)

func (f verifierFunc) Verify(tok string) (Controller, bool) { return f(tok) }

func TestAuthenticate(t *testing.T) {
	ctl := Controller{ID: "c_0a0b0c0d", Label: "voice"}
	a := Authenticator{IPCToken: "peer-tok", ChildToken: "child-tok", Controllers: []ControllerVerifier{
		verifierFunc(func(string) (Controller, bool) { return Controller{}, false }),
		verifierFunc(func(tok string) (Controller, bool) { return ctl, tok == "qpc_x" }),
	}}
	auth := func(tok string) string { return `{"msgV":1,"type":"auth","token":"` + tok + `"}` }
	tests := []struct {
		name string
		line string
		want Origin
		ok   bool
	}{
		{"our ipcToken is an ordinary peer", auth("peer-tok"), Origin{Kind: AuthPeer}, true},
		{"the child token is our own process", auth("child-tok"), Origin{Kind: AuthChild}, true},
		{"a controller grant is a controller, with its label", auth("qpc_x"), Origin{Kind: AuthController, Controller: ctl}, true},
		{"a wrong token closes the connection", auth("peer-toK"), Origin{}, false},
		{"a prefix of the token closes the connection", auth("peer"), Origin{}, false},
		{"a user frame first closes the connection", `{"msgV":1,"msgId":"a","type":"user","message":{"role":"user","content":"x"}}`, Origin{}, false},
		{"a newer msgV closes the connection", `{"msgV":2,"type":"auth","token":"peer-tok"}`, Origin{}, false},
		{"junk closes the connection", `peer-tok`, Origin{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := a.Authenticate([]byte(tt.line))
			if ok != tt.ok || got != tt.want {
				t.Fatalf("got %+v %v", got, ok)
			}
		})
	}
	t.Run("an inbox without tokens accepts no auth line", func(t *testing.T) {
		if _, ok := (Authenticator{}).Authenticate([]byte(auth(""))); ok {
			t.Fatal("accepted")
		}
	})
}

func TestGateMisaddressed(t *testing.T) {
	t.Run("a frame pinned to another session is misaddressed and costs no token", func(t *testing.T) {
		r := newRig(t, nil)
		for i := range 40 {
			in := msg("a", fmt.Sprint("x", i), fmt.Sprint(i))
			in.Frame.ToSessionID = "s0"
			want(t, r.admit(in), OutcomeMisaddressed, StatusMisaddressed)
		}
		for i := range 30 {
			want(t, r.admit(msg("a", fmt.Sprint("m", i), fmt.Sprint("b", i))), OutcomeDelivered)
			r.drain()
		}
	})
	t.Run("an unpinned frame reaches the one session", func(t *testing.T) {
		r := newRig(t, nil)
		in := msg("a", "m", "x")
		in.Frame.ToSessionID = ""
		want(t, r.admit(in), OutcomeDelivered)
	})
	t.Run("a frame pinned to the empty id is misaddressed", func(t *testing.T) {
		r := newRig(t, nil)
		l, err := ParseLine([]byte(`{"msgV":1,"msgId":"m","type":"user","fromMode":"prompting","toSessionId":"","message":{"role":"user","content":"x"}}`))
		if err != nil {
			t.Fatal(err)
		}
		want(t, r.admit(Inbound{Frame: *l.User, Origin: Origin{Kind: AuthPeer}}), OutcomeMisaddressed)
	})
	t.Run("an inbox serving several sessions needs a pin to one of them", func(t *testing.T) {
		r := newRig(t, func(c *Config) {
			c.SessionID = nil
			c.OwnsSession = func(id string) bool { return id == "s1" || id == "s2" }
		})
		unpinned := msg("a", "u", "x")
		unpinned.Frame.ToSessionID = ""
		want(t, r.admit(unpinned), OutcomeMisaddressed)
		other := msg("a", "o", "y")
		other.Frame.ToSessionID = "s3"
		want(t, r.admit(other), OutcomeMisaddressed)
		want(t, r.admit(msg("a", "ok", "z")), OutcomeDelivered)
	})
}

func TestGateBuckets(t *testing.T) {
	t.Run("32 senders at once pass the global bucket and the 33rd is rate-limited", func(t *testing.T) {
		r := newRig(t, func(c *Config) { c.Limits.MaxQueued = 100 })
		for i := range 32 {
			want(t, r.admit(msg(fmt.Sprint("s", i), fmt.Sprint("m", i), "hello")), OutcomeDelivered)
		}
		want(t, r.admit(msg("s32", "m32", "hello")), OutcomeDropped, DropRateLimited)
		r.clk.Advance(time.Second)
		want(t, r.admit(msg("s33", "m33", "hello")), OutcomeDelivered)
		want(t, r.admit(msg("s34", "m34", "hello")), OutcomeDropped, DropRateLimited)
	})
	t.Run("one sender gets 30 at once and then one every two seconds", func(t *testing.T) {
		r := newRig(t, nil)
		for i := range 30 {
			want(t, r.admit(msg("a", fmt.Sprint("m", i), fmt.Sprint(i))), OutcomeDelivered)
			r.drain()
		}
		want(t, r.admit(msg("a", "m30", "30")), OutcomeDropped, DropRateLimited)
		r.clk.Advance(time.Second)
		want(t, r.admit(msg("a", "m31", "31")), OutcomeDropped, DropRateLimited)
		r.clk.Advance(time.Second)
		want(t, r.admit(msg("a", "m32", "32")), OutcomeDelivered)
		if d := r.takeDrops(); !reflect.DeepEqual(d, []string{"m30:rate-limited", "m31:rate-limited"}) {
			t.Fatalf("drops %v", d)
		}
	})
	t.Run("a rate-limited body is not remembered: its retry is no duplicate", func(t *testing.T) {
		r := newRig(t, nil)
		for i := range 30 {
			r.admit(msg("a", fmt.Sprint("m", i), fmt.Sprint(i)))
			r.drain()
		}
		want(t, r.admit(msg("a", "x1", "retry me")), OutcomeDropped, DropRateLimited)
		r.clk.Advance(2 * time.Second)
		want(t, r.admit(msg("a", "x2", "retry me")), OutcomeDelivered)
	})
	t.Run("a new session id resets every meter", func(t *testing.T) {
		r := newRig(t, nil)
		for i := range 30 {
			r.admit(msg("a", fmt.Sprint("m", i), fmt.Sprint(i)))
			r.drain()
		}
		r.set(func(r *gateRig) { r.sid = "s2" })
		in := msg("a", "n", "fresh")
		in.Frame.ToSessionID = "s2"
		want(t, r.admit(in), OutcomeDelivered)
	})
	t.Run("a new sender evicts a meter with a full bucket before an older busy one", func(t *testing.T) {
		r := newRig(t, func(c *Config) { c.Limits.MaxTrackedSenders = 2 })
		for i := range 30 {
			r.admit(msg("busy", fmt.Sprint("b", i), fmt.Sprint(i)))
			r.drain()
		}
		r.clk.Advance(time.Minute) // global refills; busy refills too: make it busy again
		for i := range 30 {
			r.admit(msg("busy", fmt.Sprint("c", i), fmt.Sprint("c", i)))
			r.drain()
		}
		r.admit(msg("idle", "i", "x"))
		r.drain()
		r.clk.Advance(2 * time.Second) // idle is full again, busy has one token
		r.admit(msg("new", "n", "y"))
		r.drain()
		want(t, r.admit(msg("busy", "d1", "d1")), OutcomeDelivered)
		want(t, r.admit(msg("busy", "d2", "d2")), OutcomeDropped, DropRateLimited)
	})
}

func TestGateDuplicates(t *testing.T) {
	t.Run("the same body from the same sender within 30 s is a duplicate and costs nothing", func(t *testing.T) {
		r := newRig(t, nil)
		want(t, r.admit(msg("a", "m0", "same")), OutcomeDelivered)
		for i := range 40 {
			want(t, r.admit(msg("a", fmt.Sprint("d", i), "same")), OutcomeDropped, DropDuplicate)
		}
		r.drain()
		for i := range 29 {
			want(t, r.admit(msg("a", fmt.Sprint("m", i+1), fmt.Sprint(i))), OutcomeDelivered)
			r.drain()
		}
		want(t, r.admit(msg("a", "over", "over")), OutcomeDropped, DropRateLimited)
	})
	t.Run("another sender may send the same body", func(t *testing.T) {
		r := newRig(t, nil)
		r.admit(msg("a", "m1", "same"))
		want(t, r.admit(msg("b", "m2", "same")), OutcomeDelivered)
	})
	t.Run("after 30 s the same body is welcome again", func(t *testing.T) {
		r := newRig(t, nil)
		r.admit(msg("a", "m1", "same"))
		r.clk.Advance(29 * time.Second)
		want(t, r.admit(msg("a", "m2", "same")), OutcomeDropped, DropDuplicate)
		r.clk.Advance(time.Second)
		want(t, r.admit(msg("a", "m3", "same")), OutcomeDelivered)
	})
	t.Run("only the previous body counts", func(t *testing.T) {
		r := newRig(t, nil)
		r.admit(msg("a", "m1", "one"))
		r.admit(msg("a", "m2", "two"))
		want(t, r.admit(msg("a", "m3", "one")), OutcomeDelivered)
	})
	t.Run("children and controllers may repeat themselves", func(t *testing.T) {
		r := newRig(t, nil)
		for _, o := range []Origin{{Kind: AuthChild}, {Kind: AuthController, Controller: Controller{ID: "c_00000001"}}} {
			for i := range 3 {
				in := msg("a", fmt.Sprint(o.Kind, i), "same")
				in.Origin = o
				want(t, r.admit(in), OutcomeDelivered)
			}
		}
	})
	t.Run("a body the session never saw leaves the window: a refused one may be re-sent", func(t *testing.T) {
		r := newRig(t, nil)
		r.set(func(r *gateRig) { r.policy = PolicyRefuse })
		want(t, r.admit(msg("a", "m1", "same")), OutcomeRefused, StatusRefused)
		r.set(func(r *gateRig) { r.policy = PolicyUnset })
		want(t, r.admit(msg("a", "m2", "same")), OutcomeDelivered)
	})
}

func TestGateSettledAndHeldIDs(t *testing.T) {
	t.Run("a re-sent delivered id repeats its verdict, whatever its body", func(t *testing.T) {
		r := newRig(t, nil)
		r.admit(msg("a", "Ab-1", "first"))
		r.takeReports()
		want(t, r.admit(msg("b", "ab1", "another body")), OutcomeRepeated, StatusDelivered)
		if got := r.takeReports(); !reflect.DeepEqual(got, []string{"ab1:delivered"}) {
			t.Fatalf("reports %v", got)
		}
		if n := r.drain(); n != 1 {
			t.Fatalf("%d delivered", n)
		}
	})
	t.Run("a re-sent held id is held once", func(t *testing.T) {
		r := newRig(t, nil)
		in := msg("a", "h1", "x")
		in.Frame.FromMode = message.ModeBypass
		want(t, r.admit(in), OutcomeHeld, CauseModeMismatch)
		in.Frame.Content = "y"
		want(t, r.admit(in), OutcomeHeld, Status(StatusHeld))
		if n := len(r.g.Held()); n != 1 {
			t.Fatalf("%d held", n)
		}
	})
	t.Run("only 512 settled ids are remembered", func(t *testing.T) {
		r := newRig(t, func(c *Config) { c.Limits.MaxQueued = 1000; c.Limits.GlobalBurst = 1000; c.Limits.SenderBurst = 1000 })
		for i := range 513 {
			r.admit(msg("a", fmt.Sprint("m", i), fmt.Sprint(i)))
		}
		r.drain()
		want(t, r.admit(msg("a", "m0", "again")), OutcomeDelivered)
		// Settling m0 anew pushed out m1, the oldest left.
		want(t, r.admit(msg("a", "m1", "again 2")), OutcomeDelivered)
		want(t, r.admit(msg("a", "m3", "again 3")), OutcomeRepeated)
	})
}

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
			r.set(func(r *gateRig) { r.policy, r.polErr, r.class = tt.policy, tt.polErr, tt.class })
			want(t, r.admit(tt.in), tt.outcome, tt.cause)
		})
	}
	t.Run("a refused id stays refused", func(t *testing.T) {
		r := newRig(t, nil)
		r.set(func(r *gateRig) { r.policy = PolicyRefuse })
		r.admit(msg("a", "m", "x"))
		r.set(func(r *gateRig) { r.policy = PolicyAccept })
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

func TestGateCapacity(t *testing.T) {
	bypass := func(sender, id string) Inbound {
		in := msg(sender, id, id)
		in.Frame.FromMode = message.ModeBypass
		return in
	}
	t.Run("the 51st held message is dropped queue-full, not swapped in", func(t *testing.T) {
		r := newRig(t, func(c *Config) { c.Limits.GlobalBurst = 100 })
		for i := range 50 {
			want(t, r.admit(bypass(fmt.Sprint("s", i), fmt.Sprint("h", i))), OutcomeHeld)
		}
		want(t, r.admit(bypass("s50", "h50")), OutcomeDropped, DropQueueFull)
		if held := r.g.Held(); len(held) != 50 || held[0].Inbound.Frame.MsgID != "h0" {
			t.Fatalf("%d held", len(held))
		}
	})
	t.Run("with several sessions each has its own 50", func(t *testing.T) {
		r := newRig(t, func(c *Config) {
			c.Limits.GlobalBurst = 100
			c.SessionID = nil
			c.OwnsSession = func(string) bool { return true }
		})
		for i := range 50 {
			r.admit(bypass(fmt.Sprint("s", i), fmt.Sprint("h", i)))
		}
		other := bypass("x", "o")
		other.Frame.ToSessionID = "S2"
		want(t, r.admit(other), OutcomeHeld)
	})
	t.Run("the 51st accepted message finds the queue full; consuming one makes room", func(t *testing.T) {
		r := newRig(t, func(c *Config) { c.Limits.GlobalBurst = 100 })
		for i := range 50 {
			want(t, r.admit(msg(fmt.Sprint("s", i), fmt.Sprint("m", i), "x")), OutcomeDelivered)
		}
		want(t, r.admit(msg("a", "over", "body")), OutcomeDropped, DropQueueFull)
		<-r.g.Deliveries()
		r.clk.Advance(time.Second)
		want(t, r.admit(msg("a", "again", "body")), OutcomeDelivered) // not a duplicate: never seen
	})
}

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
		r.set(func(r *gateRig) { r.expiry = 10 * time.Minute })
		r.admit(held("h1"))
		r.clk.Advance(2 * time.Minute)
		r.set(func(r *gateRig) { r.expiry = time.Minute })
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
		r.set(func(r *gateRig) { r.expiry = HoldForever })
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
		if got := r.g.Decide("h1", true); got != DecideDone {
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
		r.g.Decide("h1", false)
		want(t, r.admit(held("h2", "x")), OutcomeHeld)
		want(t, r.admit(held("h1", "y")), OutcomeRepeated, StatusDenied)
	})
	t.Run("an unknown id is gone", func(t *testing.T) {
		r := newRig(t, nil)
		if got := r.g.Decide("nope", true); got != DecideGone {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("an approval that finds the queue full parks the message again where it was", func(t *testing.T) {
		r := newRig(t, func(c *Config) { c.Limits.GlobalBurst = 100 })
		r.admit(held("h1", "x"))
		r.admit(held("h2", "y"))
		for i := range 50 {
			r.admit(msg(fmt.Sprint("s", i), fmt.Sprint("m", i), "z"))
		}
		r.takeReports()
		if got := r.g.Decide("h1", true); got != DecideFailed {
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
		r.set(func(r *gateRig) { r.sid = "s2" })
		r.takeReports()
		if got := r.g.Decide("h1", true); got != DecideGone {
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
		r.set(func(r *gateRig) { r.class = message.ModeBypass })
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
		r.set(func(r *gateRig) { r.policy = PolicyRefuse })
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
		r.set(func(r *gateRig) { r.policy = PolicyHold })
		want(t, r.admit(in), OutcomeHeld, CauseExplicitSetting)
		r.g.ForgetController("c_00000001")
		r.set(func(r *gateRig) { r.policy = PolicyUnset })
		if got := r.g.Reevaluate(); got != 0 {
			t.Fatal("released under the revoked grant")
		}
		if hm := r.g.Held(); hm[0].Cause != CauseModeMismatch || hm[0].Inbound.Origin.Kind != AuthPeer {
			t.Fatalf("held %+v", hm[0])
		}
	})
}

func TestGateShutdown(t *testing.T) {
	r := newRig(t, nil)
	h := msg("a", "h1", "x")
	h.Frame.FromMode = message.ModeBypass
	r.admit(h)
	r.admit(msg("b", "q1", "y"))
	r.takeReports()
	r.g.Shutdown()
	r.g.Shutdown()
	got := r.takeReports()
	if !reflect.DeepEqual(got, []string{"h1:expired", "q1:expired"}) {
		t.Fatalf("reports %v", got)
	}
	if _, open := <-r.g.Deliveries(); open {
		t.Fatal("Deliveries is still open")
	}
	t.Run("later arrivals are expired, refusals still refused", func(t *testing.T) {
		want(t, r.admit(msg("c", "late", "z")), OutcomeExpired, StatusExpired)
		r.set(func(r *gateRig) { r.policy = PolicyRefuse })
		want(t, r.admit(msg("d", "late2", "w")), OutcomeRefused)
	})
	if r.clk.Pending() != 0 {
		t.Fatal("a timer survived shutdown")
	}
}

func TestGateIsSafeForConcurrentUse(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Limits.MaxQueued = 1000 })
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[Outcome]int{}
	for s := range 8 {
		wg.Go(func() {
			for i := range 10 {
				in := msg(fmt.Sprint("s", s), fmt.Sprintf("m%d-%d", s, i), strings.Repeat("x", i))
				if i%3 == 0 {
					in.Frame.FromMode = message.ModeBypass
				}
				d := r.admit(in)
				mu.Lock()
				outcomes[d.Outcome]++
				mu.Unlock()
				r.g.Held()
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			r.g.Reevaluate()
			r.clk.Advance(time.Second)
		}
	})
	wg.Wait()
	total := 0
	for _, n := range outcomes {
		total += n
	}
	if total != 80 || outcomes[OutcomeDelivered]+outcomes[OutcomeHeld]+outcomes[OutcomeDropped] != 80 {
		t.Fatalf("outcomes %v", outcomes)
	}
}

// The checks run in Qwen Code's order (INTEROP.md): global bucket,
// duplicate, per-sender bucket, settled ids. Each case reaches two of them
// at once, so that the first one decides.
func TestGateAdmissionOrder(t *testing.T) {
	t.Run("a sender with an empty bucket re-sending its previous body gets duplicate, not rate-limited", func(t *testing.T) {
		r := newRig(t, nil)
		for i := range 30 {
			want(t, r.admit(msg("a", fmt.Sprint("m", i), fmt.Sprint("body ", i))), OutcomeDelivered)
			r.drain()
		}
		want(t, r.admit(msg("a", "fresh", "another body")), OutcomeDropped, DropRateLimited) // the bucket is empty
		want(t, r.admit(msg("a", "again", "body 29")), OutcomeDropped, DropDuplicate)
	})
	t.Run("with the global bucket empty a repeated body gets rate-limited, not duplicate", func(t *testing.T) {
		r := newRig(t, nil)
		for i := range 32 {
			want(t, r.admit(msg(fmt.Sprint("s", i), fmt.Sprint("m", i), fmt.Sprint("body ", i))), OutcomeDelivered)
			r.drain()
		}
		want(t, r.admit(msg("s0", "again", "body 0")), OutcomeDropped, DropRateLimited)
		r.clk.Advance(time.Second) // one global token back: now the duplicate check decides
		want(t, r.admit(msg("s0", "again2", "body 0")), OutcomeDropped, DropDuplicate)
	})
	t.Run("with the sender's bucket empty a re-sent settled id is dropped rate-limited, not given its old verdict", func(t *testing.T) {
		r := newRig(t, nil)
		for i := range 30 {
			want(t, r.admit(msg("a", fmt.Sprint("m", i), fmt.Sprint("body ", i))), OutcomeDelivered)
			r.drain()
		}
		r.takeReports()
		want(t, r.admit(msg("a", "m0", "a new body")), OutcomeDropped, DropRateLimited)
		if got := r.takeReports(); got != nil {
			t.Fatalf("a dropped re-send was reported as %v", got)
		}
		r.clk.Advance(2 * time.Second) // one token back: now the settled id decides
		want(t, r.admit(msg("a", "m0", "a newer body")), OutcomeRepeated, StatusDelivered)
	})
}
