package qwen

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	iclock "github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

// guardRun drives a Guard serving two sessions with small caps through the
// operations ops encodes, checking after each that nothing exceeds its cap
// and that every frame got the outcome the guard promised. Each admitted
// frame is tagged (FromName, which the guard never reads) so its receipts can
// be counted.
type guardRun struct {
	t      *testing.T
	clk    *clock.FakeClock
	g      *Guard
	lim    Limits
	policy Policy
	tags   int

	reports  map[string][]Status // by tag, every receipt the guard asked for
	drops    map[string]int      // by tag
	fresh    map[string]bool     // tags held by a fresh hold
	admitted []UserFrame         // for re-sends of an id
	queued   int
}

var fuzzSessions = []string{"5d0d1c8e-0000-4000-8000-00000000000a", "5d0d1c8e-0000-4000-8000-00000000000b", "not-ours"}

func newGuardRun(t *testing.T) *guardRun {
	r := &guardRun{t: t, clk: clock.NewFakeClock(time.Time{}),
		reports: map[string][]Status{}, drops: map[string]int{}, fresh: map[string]bool{}}
	r.lim = Limits{MaxQueued: 3, MaxHeld: 2, MaxSettled: 8, MaxTrackedSenders: 3, Global: iclock.Bucket{Burst: 6}, Sender: iclock.Bucket{Burst: 4}}
	r.g = NewGuard(GuardConfig{
		Clock:       r.clk,
		Limits:      r.lim,
		Policy:      func(string) (Policy, error) { return r.policy, nil },
		ReviewClass: func(string) message.Mode { return message.ModePrompting },
		HeldExpiry: func(sid string) time.Duration {
			if sid == fuzzSessions[1] {
				return HoldForever
			}
			return time.Minute
		},
		OwnsSession: func(id string) bool { return id == fuzzSessions[0] || id == fuzzSessions[1] },
		Report: func(rp Report) {
			tag := rp.Inbound.Frame.FromName
			r.reports[tag] = append(r.reports[tag], rp.Status)
		},
		Dropped: func(in Inbound, _ message.DropReason) { r.drops[in.Frame.FromName]++ },
	})
	r.lim = r.g.Limits()
	return r
}

// step runs one operation chosen by op, with arg as its parameter.
func (r *guardRun) step(op, arg byte) {
	switch op % 8 {
	case 0, 1, 2: // a new frame
		r.admit(r.frame(arg))
	case 3: // the same id again, from the same sender
		if len(r.admitted) > 0 {
			f := r.admitted[int(arg)%len(r.admitted)]
			r.admit(f)
		}
	case 4:
		r.clk.Advance(time.Duration(arg) * time.Second)
	case 5: // a person decides a held message
		if hs := r.g.Held(); len(hs) > 0 {
			r.g.Decide(hs[int(arg)%len(hs)].Inbound.Frame.MsgID, arg&1 == 0, "")
		}
	case 6: // the session consumes a delivery
		select {
		case <-r.g.Deliveries():
			r.queued--
		default:
		}
	case 7: // the setting changes
		r.policy = Policy(arg % 4)
		r.g.Reevaluate()
	}
	r.checkCaps()
}

func (r *guardRun) frame(arg byte) UserFrame {
	mode := []message.Mode{message.ModeUnknown, message.ModeBypass, message.ModePrompting}[arg%3]
	return UserFrame{
		MsgID:       "m-" + strconv.Itoa(len(r.admitted)),
		From:        "/tmp/s" + strconv.Itoa(int(arg>>2)%4) + ".sock",
		FromMode:    mode,
		ToSessionID: fuzzSessions[int(arg>>4)%len(fuzzSessions)],
		Content:     "body " + strconv.Itoa(int(arg>>6)),
	}
}

func (r *guardRun) admit(f UserFrame) {
	r.tags++
	tag := "t" + strconv.Itoa(r.tags)
	f.FromName = tag
	r.admitted = append(r.admitted, f)
	before := len(r.g.Deliveries())
	d := r.g.Admit(Inbound{Frame: f, Origin: Origin{Kind: AuthPeer}})
	got := r.reports[tag]
	switch {
	case d.Outcome == OutcomeDropped:
		if r.drops[tag] != 1 || len(got) != 0 || d.Drop == 0 {
			r.t.Fatalf("%s dropped (%v): %d drop notes and receipts %v, want one note and no receipt", tag, d.Drop, r.drops[tag], got)
		}
	case d.Outcome == 0 || d.Outcome > OutcomeExpired:
		r.t.Fatalf("%s: no outcome: %+v", tag, d)
	default:
		if r.drops[tag] != 0 || len(got) != 1 || got[0] != d.Receipt {
			r.t.Fatalf("%s %v: receipts %v and %d drop notes, want exactly one %v receipt", tag, d.Outcome, got, r.drops[tag], d.Receipt)
		}
	}
	if d.Outcome == OutcomeHeld && d.Cause != 0 {
		r.fresh[tag] = true
	}
	if d.Outcome == OutcomeDelivered && len(r.g.Deliveries()) != before+1 {
		r.t.Fatalf("%s delivered but the queue went from %d to %d", tag, before, len(r.g.Deliveries()))
	}
}

func (r *guardRun) checkCaps() {
	if n := len(r.g.Deliveries()); n > r.lim.MaxQueued {
		r.t.Fatalf("queue holds %d, over %d", n, r.lim.MaxQueued)
	}
	per := map[string]int{}
	for _, h := range r.g.Held() {
		per[h.Inbound.Frame.ToSessionID]++
	}
	for sid, n := range per {
		if n > r.lim.MaxHeld {
			r.t.Fatalf("%d held for %s, over %d", n, sid, r.lim.MaxHeld)
		}
	}
}

// finish shuts the guard down and checks that every fresh hold was settled,
// and that no frame heard more than one final word, but for the expiry of
// a delivery still queued at shutdown.
func (r *guardRun) finish() {
	r.g.Shutdown()
	for range r.g.Deliveries() {
	}
	for tag, sts := range r.reports {
		var finals []Status
		for _, s := range sts {
			if s != StatusHeld {
				finals = append(finals, s)
			}
		}
		switch {
		case r.fresh[tag] && len(finals) == 0:
			r.t.Fatalf("held %s was never settled: %v", tag, sts)
		case len(finals) > 2:
			r.t.Fatalf("%s heard %v", tag, sts)
		case len(finals) == 2 && (finals[0] != StatusDelivered || finals[1] != StatusExpired):
			r.t.Fatalf("%s heard %v; only a delivery still queued at shutdown may expire later", tag, sts)
		}
	}
	if len(r.g.Held()) != 0 {
		r.t.Fatal("messages still held after shutdown")
	}
}

func FuzzGate(f *testing.F) {
	f.Add([]byte{0, 0x22, 0, 0x22, 0, 0x22, 0, 0x22, 4, 61, 5, 0})
	f.Add([]byte{0, 0x13, 1, 0x13, 2, 0x13, 3, 0, 7, 1, 6, 0, 6, 0})
	f.Add([]byte{7, 2, 0, 0x12, 0, 0x16, 0, 0x1a, 0, 0x1e, 6, 0, 4, 30, 4, 31})
	f.Add([]byte{0, 0x01, 0, 0x01, 0, 0x01, 3, 0, 5, 1, 3, 1, 7, 3, 3, 0})
	f.Add([]byte{7, 1, 0, 0x32, 0, 0x36, 0, 0x3a, 0, 0x3e, 0, 0x02, 5, 0, 5, 1, 7, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 400 {
			return
		}
		r := newGuardRun(t)
		for i := 0; i+1 < len(ops); i += 2 {
			r.step(ops[i], ops[i+1])
		}
		r.finish()
	})
}

// FuzzLedger applies random receipts to random sends and checks that the
// ledger moves only along the transition table, never moves an id it does
// not track, and ignores a receipt applied twice.
func FuzzLedger(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 1, 5, 1, 5, 2, 0, 1, 7})
	f.Add([]byte{0, 0, 0, 1, 0, 2, 1, 0x70, 1, 0x71, 3, 0, 1, 0x23})
	f.Fuzz(func(t *testing.T, ops []byte) {
		clk := clock.NewFakeClock(time.Time{})
		l := NewLedger(clk)
		l.max = 4 // small, so forgetting the oldest is exercised
		want := map[string]message.Status{}
		order := []string{}
		id := func(b byte) string { return fmt.Sprintf("m-%d", b%8) }
		for i := 0; i+1 < len(ops); i += 2 {
			arg := ops[i+1]
			switch ops[i] % 4 {
			case 0:
				l.Track(id(arg), "/tmp/x.sock")
				want[id(arg)] = message.StatusSent
				order = append(remove(order, id(arg)), id(arg))
				for len(order) > l.max {
					delete(want, order[0])
					order = order[1:]
				}
			case 1, 2:
				st := Status(arg>>4) % Status(len(statusWire)+1) // 0 and one past the last are unknown
				fr := StatusFrame{MsgID: "r", Status: st, OrigMsgID: id(arg)}
				if ops[i]%4 == 2 {
					fr.DroppedMsgIDs = []string{id(arg + 1), id(arg + 3)}
				}
				before := map[string]message.Status{}
				for k, v := range want {
					before[k] = v
				}
				moves := l.Apply(fr)
				for _, mv := range moves {
					prev, ok := before[mv.MsgID]
					if !ok {
						t.Fatalf("moved %s, which is not tracked", mv.MsgID)
					}
					if mv.Previous != prev || !CanMove(prev, mv.Receipt.Status) || mv.Receipt.Status != st.Model() {
						t.Fatalf("moved %s %v -> %v (by %v); the table does not allow it", mv.MsgID, mv.Previous, mv.Receipt.Status, st)
					}
					want[mv.MsgID] = mv.Receipt.Status
				}
				if again := l.Apply(fr); len(again) != 0 {
					t.Fatalf("the same receipt moved %v again", again)
				}
			case 3:
				l.Forget(id(arg))
				delete(want, id(arg))
				order = remove(order, id(arg))
			}
			for k, v := range want {
				if got, ok := l.State(k); !ok || got != v {
					t.Fatalf("%s is %v (%v), want %v", k, got, ok, v)
				}
			}
		}
	})
}

func remove(ss []string, s string) []string {
	out := ss[:0]
	for _, x := range ss {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
