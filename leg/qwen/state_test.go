package qwen

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

func TestTransitionsAreTheProtocolTable(t *testing.T) {
	// The table from the protocol page, written out independently.
	allowed := map[string][]string{
		"pending":   {"held", "delivered", "denied", "refused", "expired", "misaddressed", "dropped"},
		"held":      {"delivered", "denied", "expired", "misaddressed"},
		"delivered": {"expired", "misaddressed"},
	}
	froms := []message.Status{message.StatusSent}
	for s := StatusHeld; s <= StatusDropped; s++ {
		froms = append(froms, s.Model())
	}
	for _, from := range froms {
		for to := StatusHeld; to <= StatusDropped; to++ {
			want := false
			for _, a := range allowed[state(from)] {
				want = want || a == to.String()
			}
			name := fmt.Sprintf("%s to %s is ignored", state(from), to)
			if want {
				name = fmt.Sprintf("%s moves to %s", state(from), to)
			}
			t.Run(name, func(t *testing.T) {
				if got := CanMove(from, to.Model()); got != want {
					t.Fatalf("CanMove = %v", got)
				}
			})
		}
	}
}

func receipt(st Status, orig string, dropped ...string) StatusFrame {
	f := NewStatusFrame(st, orig, "/peer.sock")
	f.DroppedMsgIDs = dropped
	return f
}

func TestLedger(t *testing.T) {
	clk := clock.NewFakeClock(time.Time{})
	moves := func(l *Ledger, f StatusFrame) []string {
		var out []string
		for _, s := range l.Apply(f) {
			out = append(out, fmt.Sprintf("%s:%s>%s", s.MsgID, state(s.Previous), s.Receipt.Status))
		}
		return out
	}
	t.Run("receipts move a sent message through held to delivered, then expired", func(t *testing.T) {
		l := NewLedger(clk)
		l.Track("m1", "/t")
		got := append(moves(l, receipt(StatusHeld, "m1")), moves(l, receipt(StatusDelivered, "m1"))...)
		got = append(got, moves(l, receipt(StatusExpired, "m1"))...)
		if !reflect.DeepEqual(got, []string{"m1:pending>held", "m1:held>delivered", "m1:delivered>expired"}) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("a repeated receipt, a late held and a refusal after a hold are ignored", func(t *testing.T) {
		l := NewLedger(clk)
		l.Track("m1", "/t")
		moves(l, receipt(StatusHeld, "m1"))
		for _, f := range []StatusFrame{receipt(StatusHeld, "m1"), receipt(StatusRefused, "m1")} {
			if got := moves(l, f); got != nil {
				t.Fatalf("moved %v", got)
			}
		}
		if s, _ := l.State("m1"); s != message.StatusHeld {
			t.Fatalf("state %v", s)
		}
	})
	t.Run("a receipt for an id we never sent is noise", func(t *testing.T) {
		l := NewLedger(clk)
		if got := l.Apply(receipt(StatusDelivered, "nope")); got != nil {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("ids are matched canonically", func(t *testing.T) {
		l := NewLedger(clk)
		l.Track("Ab-Cd", "/t")
		got := l.Apply(receipt(StatusDenied, "abcd"))
		if len(got) != 1 || got[0].MsgID != "Ab-Cd" || got[0].Receipt.MsgID != "Ab-Cd" {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("one dropped receipt settles every id it names that is still pending", func(t *testing.T) {
		l := NewLedger(clk)
		for _, id := range []string{"a", "b", "c", "d"} {
			l.Track(id, "/t")
		}
		moves(l, receipt(StatusHeld, "c"))
		f := NewDropFrame("a", "/peer", message.DropRateLimited, []string{"b", "c", "zz", "a"})
		got := moves(l, f)
		if !reflect.DeepEqual(got, []string{"a:pending>dropped", "b:pending>dropped"}) {
			t.Fatalf("got %v", got)
		}
		if r := l.Apply(NewDropFrame("d", "/p", message.DropDuplicate, nil)); r[0].Receipt.DropReason != message.DropDuplicate {
			t.Fatalf("drop reason %q", r[0].Receipt.DropReason)
		}
	})
	t.Run("the receipt's reason is flattened and its age measured", func(t *testing.T) {
		l := NewLedger(clk)
		l.Track("m", "/t")
		clk.Advance(3 * time.Second)
		f := receipt(StatusHeld, "m")
		f.Reason = "wait\nfor\u2028me"
		got := l.Apply(f)
		if got[0].Receipt.Reason != "wait for me" || got[0].Age != 3*time.Second || got[0].Target != "/t" {
			t.Fatalf("got %+v", got[0])
		}
	})
	t.Run("the 201st message pushes out the oldest", func(t *testing.T) {
		l := NewLedger(clk)
		for i := range MaxTrackedSends + 1 {
			l.Track(fmt.Sprint("m", i), "/t")
		}
		if _, ok := l.State("m0"); ok {
			t.Fatal("m0 is still tracked")
		}
		if _, ok := l.State("m1"); !ok {
			t.Fatal("m1 was forgotten")
		}
	})
	t.Run("a forgotten message takes no receipts", func(t *testing.T) {
		l := NewLedger(clk)
		l.Track("m", "/t")
		l.Forget("M")
		if got := l.Apply(receipt(StatusDelivered, "m")); got != nil {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("concurrent receipts move a message once", func(t *testing.T) {
		l := NewLedger(clk)
		l.Track("m", "/t")
		var wg sync.WaitGroup
		var mu sync.Mutex
		n := 0
		for range 16 {
			wg.Go(func() {
				k := len(l.Apply(receipt(StatusDelivered, "m")))
				mu.Lock()
				n += k
				mu.Unlock()
			})
		}
		wg.Wait()
		if n != 1 {
			t.Fatalf("moved %d times", n)
		}
	})
}

func state(s message.Status) string {
	if s == message.StatusSent {
		return "pending"
	}
	return s.String()
}
