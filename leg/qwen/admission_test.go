package qwen

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	iclock "github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

// guardRig is a guard for tests: one session "s1" in the prompting class,
// receipts and drops recorded as "msgId:status".
type guardRig struct {
	g   *Guard
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

func newRig(t *testing.T, edit func(*GuardConfig)) *guardRig {
	t.Helper()
	r := &guardRig{clk: clock.NewFakeClock(time.Time{}), class: message.ModePrompting, sid: "s1"}
	cfg := GuardConfig{
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
		Dropped: func(in Inbound, d message.DropReason) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.drops = append(r.drops, in.Frame.MsgID+":"+d.String())
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	r.g = NewGuard(cfg)
	t.Cleanup(r.g.Shutdown)
	return r
}

func (r *guardRig) set(f func(r *guardRig)) { r.mu.Lock(); defer r.mu.Unlock(); f(r) }

func (r *guardRig) takeReports() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reports
	r.reports = nil
	return out
}

func (r *guardRig) takeDrops() []string {
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

func (r *guardRig) admit(in Inbound) Decision { return r.g.Admit(in) }

func (r *guardRig) drain() int {
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
		case message.DropReason:
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
	want := Limits{Sender: iclock.Bucket{Rate: 0.5, Burst: 30}, Global: iclock.Bucket{Rate: 1, Burst: 32},
		DedupWindow: 30 * time.Second, MaxTrackedSenders: 256, MaxSettled: 512, MaxHeld: 50, MaxHeldBytes: 8 << 20, MaxQueued: 50}
	if got := DefaultLimits(); got != want {
		t.Fatalf("got %+v", got)
	}
	if got := NewGuard(GuardConfig{}).Limits(); got != want {
		t.Fatalf("zero limits became %+v", got)
	}
	if d := want.burstWindow(); d != time.Minute {
		t.Fatalf("burst window %v", d)
	}
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
		r := newRig(t, func(c *GuardConfig) {
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
		r := newRig(t, func(c *GuardConfig) { c.Limits.MaxQueued = 100 })
		for i := range 32 {
			want(t, r.admit(msg(fmt.Sprint("s", i), fmt.Sprint("m", i), "hello")), OutcomeDelivered)
		}
		want(t, r.admit(msg("s32", "m32", "hello")), OutcomeDropped, message.DropRateLimited)
		r.clk.Advance(time.Second)
		want(t, r.admit(msg("s33", "m33", "hello")), OutcomeDelivered)
		want(t, r.admit(msg("s34", "m34", "hello")), OutcomeDropped, message.DropRateLimited)
	})
	t.Run("one sender gets 30 at once and then one every two seconds", func(t *testing.T) {
		r := newRig(t, nil)
		for i := range 30 {
			want(t, r.admit(msg("a", fmt.Sprint("m", i), fmt.Sprint(i))), OutcomeDelivered)
			r.drain()
		}
		want(t, r.admit(msg("a", "m30", "30")), OutcomeDropped, message.DropRateLimited)
		r.clk.Advance(time.Second)
		want(t, r.admit(msg("a", "m31", "31")), OutcomeDropped, message.DropRateLimited)
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
		want(t, r.admit(msg("a", "x1", "retry me")), OutcomeDropped, message.DropRateLimited)
		r.clk.Advance(2 * time.Second)
		want(t, r.admit(msg("a", "x2", "retry me")), OutcomeDelivered)
	})
	t.Run("a new session id resets every meter", func(t *testing.T) {
		r := newRig(t, nil)
		for i := range 30 {
			r.admit(msg("a", fmt.Sprint("m", i), fmt.Sprint(i)))
			r.drain()
		}
		r.set(func(r *guardRig) { r.sid = "s2" })
		in := msg("a", "n", "fresh")
		in.Frame.ToSessionID = "s2"
		want(t, r.admit(in), OutcomeDelivered)
	})
	t.Run("a new sender evicts a meter with a full bucket before an older busy one", func(t *testing.T) {
		r := newRig(t, func(c *GuardConfig) { c.Limits.MaxTrackedSenders = 2 })
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
		want(t, r.admit(msg("busy", "d2", "d2")), OutcomeDropped, message.DropRateLimited)
	})
}

func TestGateDuplicates(t *testing.T) {
	t.Run("the same body from the same sender within 30 s is a duplicate and costs nothing", func(t *testing.T) {
		r := newRig(t, nil)
		want(t, r.admit(msg("a", "m0", "same")), OutcomeDelivered)
		for i := range 40 {
			want(t, r.admit(msg("a", fmt.Sprint("d", i), "same")), OutcomeDropped, message.DropDuplicate)
		}
		r.drain()
		for i := range 29 {
			want(t, r.admit(msg("a", fmt.Sprint("m", i+1), fmt.Sprint(i))), OutcomeDelivered)
			r.drain()
		}
		want(t, r.admit(msg("a", "over", "over")), OutcomeDropped, message.DropRateLimited)
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
		want(t, r.admit(msg("a", "m2", "same")), OutcomeDropped, message.DropDuplicate)
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
		r.set(func(r *guardRig) { r.policy = PolicyRefuse })
		want(t, r.admit(msg("a", "m1", "same")), OutcomeRefused, StatusRefused)
		r.set(func(r *guardRig) { r.policy = PolicyUnset })
		want(t, r.admit(msg("a", "m2", "same")), OutcomeDelivered)
	})
}

// Held bodies are capped in bytes as on the Claude leg: the next one that
// would pass MaxHeldBytes is dropped queue-full, and nothing is evicted.
func TestGateCapsHeldBytes(t *testing.T) {
	r := newRig(t, func(c *GuardConfig) { c.Limits.MaxHeldBytes = 100 })
	r.set(func(r *guardRig) { r.policy = PolicyHold })
	want(t, r.admit(msg("a", "m1", strings.Repeat("x", 60))), OutcomeHeld)
	want(t, r.admit(msg("b", "m2", strings.Repeat("y", 40))), OutcomeHeld)
	want(t, r.admit(msg("c", "m3", "z")), OutcomeDropped, message.DropQueueFull)
	if got := r.takeDrops(); fmt.Sprint(got) != "[m3:queue-full]" {
		t.Fatalf("drops %v", got)
	}
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
		r := newRig(t, func(c *GuardConfig) {
			c.Limits.MaxQueued = 1000
			c.Limits.Global.Burst = 1000
			c.Limits.Sender.Burst = 1000
		})
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

func TestGateCapacity(t *testing.T) {
	bypass := func(sender, id string) Inbound {
		in := msg(sender, id, id)
		in.Frame.FromMode = message.ModeBypass
		return in
	}
	t.Run("the 51st held message is dropped queue-full, not swapped in", func(t *testing.T) {
		r := newRig(t, func(c *GuardConfig) { c.Limits.Global.Burst = 100 })
		for i := range 50 {
			want(t, r.admit(bypass(fmt.Sprint("s", i), fmt.Sprint("h", i))), OutcomeHeld)
		}
		want(t, r.admit(bypass("s50", "h50")), OutcomeDropped, message.DropQueueFull)
		if held := r.g.Held(); len(held) != 50 || held[0].Inbound.Frame.MsgID != "h0" {
			t.Fatalf("%d held", len(held))
		}
	})
	t.Run("with several sessions each has its own 50", func(t *testing.T) {
		r := newRig(t, func(c *GuardConfig) {
			c.Limits.Global.Burst = 100
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
		r := newRig(t, func(c *GuardConfig) { c.Limits.Global.Burst = 100 })
		for i := range 50 {
			want(t, r.admit(msg(fmt.Sprint("s", i), fmt.Sprint("m", i), "x")), OutcomeDelivered)
		}
		want(t, r.admit(msg("a", "over", "body")), OutcomeDropped, message.DropQueueFull)
		<-r.g.Deliveries()
		r.clk.Advance(time.Second)
		want(t, r.admit(msg("a", "again", "body")), OutcomeDelivered) // not a duplicate: never seen
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
		r.set(func(r *guardRig) { r.policy = PolicyRefuse })
		want(t, r.admit(msg("d", "late2", "w")), OutcomeRefused)
	})
	if r.clk.Pending() != 0 {
		t.Fatal("a timer survived shutdown")
	}
}

func TestGateIsSafeForConcurrentUse(t *testing.T) {
	r := newRig(t, func(c *GuardConfig) { c.Limits.MaxQueued = 1000 })
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

// The checks run in Qwen Code's order (docs/protocols/qwen-cross-session.md#admission): global bucket,
// duplicate, per-sender bucket, settled ids. Each case reaches two of them
// at once, so that the first one decides.
func TestGateAdmissionOrder(t *testing.T) {
	t.Run("a sender with an empty bucket re-sending its previous body gets duplicate, not rate-limited", func(t *testing.T) {
		r := newRig(t, nil)
		for i := range 30 {
			want(t, r.admit(msg("a", fmt.Sprint("m", i), fmt.Sprint("body ", i))), OutcomeDelivered)
			r.drain()
		}
		want(t, r.admit(msg("a", "fresh", "another body")), OutcomeDropped, message.DropRateLimited) // the bucket is empty
		want(t, r.admit(msg("a", "again", "body 29")), OutcomeDropped, message.DropDuplicate)
	})
	t.Run("with the global bucket empty a repeated body gets rate-limited, not duplicate", func(t *testing.T) {
		r := newRig(t, nil)
		for i := range 32 {
			want(t, r.admit(msg(fmt.Sprint("s", i), fmt.Sprint("m", i), fmt.Sprint("body ", i))), OutcomeDelivered)
			r.drain()
		}
		want(t, r.admit(msg("s0", "again", "body 0")), OutcomeDropped, message.DropRateLimited)
		r.clk.Advance(time.Second) // one global token back: now the duplicate check decides
		want(t, r.admit(msg("s0", "again2", "body 0")), OutcomeDropped, message.DropDuplicate)
	})
	t.Run("with the sender's bucket empty a re-sent settled id is dropped rate-limited, not given its old verdict", func(t *testing.T) {
		r := newRig(t, nil)
		for i := range 30 {
			want(t, r.admit(msg("a", fmt.Sprint("m", i), fmt.Sprint("body ", i))), OutcomeDelivered)
			r.drain()
		}
		r.takeReports()
		want(t, r.admit(msg("a", "m0", "a new body")), OutcomeDropped, message.DropRateLimited)
		if got := r.takeReports(); got != nil {
			t.Fatalf("a dropped re-send was reported as %v", got)
		}
		r.clk.Advance(2 * time.Second) // one token back: now the settled id decides
		want(t, r.admit(msg("a", "m0", "a newer body")), OutcomeRepeated, StatusDelivered)
	})
}
