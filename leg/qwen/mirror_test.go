package qwen

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

func newTestMirror() (*Mirror, *clock.FakeClock) {
	clk := clock.NewFakeClock(time.Time{})
	return NewMirror(clk, Limits{}), clk
}

func wouldDrop(t *testing.T, err error) *WouldDropError {
	t.Helper()
	var w *WouldDropError
	if !errors.As(err, &w) || !errors.Is(err, ErrWouldDrop) {
		t.Fatalf("err = %v, want a *WouldDropError", err)
	}
	return w
}

func TestMirror(t *testing.T) {
	t.Run("thirty sends pass and the thirty-first is refused, naming the burst", func(t *testing.T) {
		m, _ := newTestMirror()
		for i := range 30 {
			if _, err := m.Reserve("/t", fmt.Sprint("body ", i), fmt.Sprint("m", i)); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
		_, err := m.Reserve("/t", "one more", "m30")
		w := wouldDrop(t, err)
		if w.Repeat || w.SentInBurst != 30 || !strings.Contains(err.Error(), "30 messages") || !strings.Contains(err.Error(), "1m0s") {
			t.Fatalf("got %+v: %v", w, err)
		}
	})
	t.Run("two seconds earn one more send", func(t *testing.T) {
		m, clk := newTestMirror()
		for i := range 30 {
			m.Reserve("/t", fmt.Sprint(i), fmt.Sprint("m", i))
		}
		clk.Advance(2 * time.Second)
		if _, err := m.Reserve("/t", "x", "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Reserve("/t", "y", "b"); err == nil {
			t.Fatal("a second send passed")
		}
	})
	t.Run("targets are limited apart", func(t *testing.T) {
		m, _ := newTestMirror()
		for i := range 30 {
			m.Reserve("/a", fmt.Sprint(i), fmt.Sprint("m", i))
		}
		if _, err := m.Reserve("/b", "x", "x"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the same body again within 30 s is refused as a repeat, and allowed after", func(t *testing.T) {
		m, clk := newTestMirror()
		m.Reserve("/t", "same", "m1")
		_, err := m.Reserve("/t", "same", "m2")
		if w := wouldDrop(t, err); !w.Repeat || !strings.Contains(err.Error(), "30s") {
			t.Fatalf("got %+v", w)
		}
		clk.Advance(30 * time.Second)
		if _, err := m.Reserve("/t", "same", "m3"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("only the last body counts as a repeat", func(t *testing.T) {
		m, _ := newTestMirror()
		m.Reserve("/t", "a", "m1")
		m.Reserve("/t", "b", "m2")
		if _, err := m.Reserve("/t", "a", "m3"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a refunded send costs nothing and is no repeat", func(t *testing.T) {
		m, _ := newTestMirror()
		for i := range 29 {
			m.Reserve("/t", fmt.Sprint(i), fmt.Sprint("m", i))
		}
		r, err := m.Reserve("/t", "last", "m29")
		if err != nil {
			t.Fatal(err)
		}
		r.Refund()
		r.Refund() // twice is once
		if _, err := m.Reserve("/t", "last", "again"); err != nil {
			t.Fatalf("refund did not restore: %v", err)
		}
		if _, err := m.Reserve("/t", "other", "x"); err == nil {
			t.Fatal("a second refund gave a second token")
		}
		Reservation{}.Refund() // the zero reservation is harmless
	})
	t.Run("a drained target refuses until it refills, and old refunds do not refill it", func(t *testing.T) {
		m, clk := newTestMirror()
		r, _ := m.Reserve("/t", "a", "m1")
		m.Drain("/t")
		r.Refund()
		_, err := m.Reserve("/t", "b", "m2")
		if w := wouldDrop(t, err); w.SentInBurst != 0 || !strings.Contains(err.Error(), "still over") {
			t.Fatalf("got %+v: %v", w, err)
		}
		clk.Advance(2 * time.Second)
		if _, err := m.Reserve("/t", "b", "m2"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a full-bucket target is evicted before a busier one", func(t *testing.T) {
		m := NewMirror(clock.NewFakeClock(time.Time{}), Limits{MaxTrackedSenders: 2})
		m.Reserve("/busy", "x", "m1")
		m.Drain("/busy")
		m.Reserve("/idle", "y", "m2")
		m.Refund("/idle", "m2")
		m.Reserve("/new", "z", "m3")
		if _, err := m.Reserve("/busy", "w", "m4"); err == nil {
			t.Fatal("the drained target was evicted and forgot its state")
		}
	})
}

func TestMirrorObservesReceipts(t *testing.T) {
	settle := func(st message.Status, reason message.DropReason, age time.Duration) []Settled {
		r := message.Receipt{MsgID: "m1", Status: st}
		if reason != 0 {
			r.DropReason = reason
		}
		return []Settled{{MsgID: "m1", Target: "/t", Age: age, Receipt: r}}
	}
	fill := func(m *Mirror, body string) {
		for i := range 29 {
			m.Reserve("/t", fmt.Sprint(i), fmt.Sprint("f", i))
		}
		m.Reserve("/t", body, "m1")
	}
	tests := []struct {
		name        string
		moves       []Settled
		repeatAfter bool // a re-send of the same body is refused as a repeat
		tokenBack   bool // one more send fits
	}{
		{"a duplicate drop refunds the token and keeps the body", settle(message.StatusDropped, message.DropDuplicate, 0), true, true},
		{"a queue-full drop forgets the body and keeps the token spent", settle(message.StatusDropped, message.DropQueueFull, 0), false, false},
		{"a misaddressed answer refunds token and body", settle(message.StatusMisaddressed, 0, 0), false, true},
		{"a denial forgets the body", settle(message.StatusDenied, 0, 0), false, false},
		{"held changes nothing", settle(message.StatusHeld, 0, 0), true, false},
		{"delivered changes nothing", settle(message.StatusDelivered, 0, 0), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newTestMirror()
			fill(m, "the body")
			m.Observe(tt.moves)
			_, err := m.Reserve("/t", "the body", "again")
			var w *WouldDropError
			errors.As(err, &w)
			if gotRepeat := w != nil && w.Repeat; gotRepeat != tt.repeatAfter {
				t.Fatalf("repeat refused = %v (%v)", gotRepeat, err)
			}
			if !tt.repeatAfter && (err == nil) != tt.tokenBack {
				t.Fatalf("re-send err = %v, want a token back: %v", err, tt.tokenBack)
			}
			if tt.repeatAfter {
				_, err := m.Reserve("/t", "new body", "n")
				if (err == nil) != tt.tokenBack {
					t.Fatalf("new send err = %v, want a token back: %v", err, tt.tokenBack)
				}
			}
		})
	}
	t.Run("a fresh rate-limited drop drains the target; an old one does not", func(t *testing.T) {
		m, clk := newTestMirror()
		m.Reserve("/t", "a", "m1")
		m.Observe(settle(message.StatusDropped, message.DropRateLimited, 61*time.Second))
		if _, err := m.Reserve("/t", "b", "m2"); err != nil {
			t.Fatalf("an old drop drained: %v", err)
		}
		m.Observe(settle(message.StatusDropped, message.DropRateLimited, time.Second))
		if _, err := m.Reserve("/t", "c", "m3"); err == nil {
			t.Fatal("a fresh rate-limited drop did not drain")
		}
		clk.Advance(2 * time.Second)
		if _, err := m.Reserve("/t", "c", "m3"); err != nil {
			t.Fatal(err)
		}
	})
}
