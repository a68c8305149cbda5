package clock_test

import (
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	fake "github.com/sessiongateway/gateway/testkit/clock"
)

var _ clock.Clock = (*fake.FakeClock)(nil)

func TestTicker(t *testing.T) {
	ticked := func(tk *clock.Ticker) (time.Time, bool) {
		select {
		case at := <-tk.C:
			return at, true
		default:
			return time.Time{}, false
		}
	}
	t.Run("it ticks once a period, at the period's end", func(t *testing.T) {
		c := fake.NewFakeClock(time.Time{})
		start := c.Now()
		tk := clock.NewTicker(c, time.Second)
		defer tk.Stop()
		c.Advance(999 * time.Millisecond)
		if _, ok := ticked(tk); ok {
			t.Fatal("ticked before its period")
		}
		for i := 1; i <= 3; i++ {
			c.Advance(time.Second)
			at, ok := ticked(tk)
			if want := start.Add(time.Duration(i) * time.Second); !ok || !at.Equal(want) {
				t.Fatalf("tick %d: %v %v, want %v", i, at, ok, want)
			}
		}
	})
	t.Run("ticks not read are not piled up", func(t *testing.T) {
		c := fake.NewFakeClock(time.Time{})
		tk := clock.NewTicker(c, time.Second)
		defer tk.Stop()
		c.Advance(5 * time.Second)
		if _, ok := ticked(tk); !ok {
			t.Fatal("no tick after five periods")
		}
		if _, ok := ticked(tk); ok {
			t.Fatal("a second tick was waiting")
		}
		if c.Pending() != 1 {
			t.Fatalf("%d timers pending, want the next tick's alone", c.Pending())
		}
	})
	t.Run("a stopped ticker sends nothing and leaves no timer", func(t *testing.T) {
		c := fake.NewFakeClock(time.Time{})
		tk := clock.NewTicker(c, time.Second)
		tk.Stop()
		c.Advance(3 * time.Second)
		if _, ok := ticked(tk); ok {
			t.Fatal("a stopped ticker ticked")
		}
		if c.Pending() != 0 {
			t.Fatalf("%d timers pending after Stop", c.Pending())
		}
	})
	t.Run("the wall clock ticks too", func(t *testing.T) {
		tk := clock.NewTicker(clock.Real{}, time.Millisecond)
		defer tk.Stop()
		select {
		case <-tk.C:
		case <-time.After(5 * time.Second):
			t.Fatal("no tick within 5s")
		}
	})
}
