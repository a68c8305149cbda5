package clock

import (
	"slices"
	"sync"
	"testing"
	"time"

	iclock "github.com/sessiongateway/gateway/internal/clock"
)

// FakeClock stands in for the one Clock every component takes.
var _ iclock.Clock = (*FakeClock)(nil)

func TestFakeClock(t *testing.T) {
	start := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

	t.Run("it stands still until advanced", func(t *testing.T) {
		c := NewFakeClock(start)
		if !c.Now().Equal(start) {
			t.Fatalf("Now() = %v", c.Now())
		}
		c.Advance(90 * time.Second)
		if want := start.Add(90 * time.Second); !c.Now().Equal(want) {
			t.Fatalf("Now() = %v, want %v", c.Now(), want)
		}
	})
	t.Run("the zero start is replaced by a fixed date", func(t *testing.T) {
		if NewFakeClock(time.Time{}).Now().IsZero() {
			t.Fatal("zero start kept")
		}
	})
	t.Run("due callbacks fire in due order, ties in registration order, seeing their own time", func(t *testing.T) {
		c := NewFakeClock(start)
		var got []string
		at := func(name string) func() {
			return func() { got = append(got, name+"@"+c.Now().Sub(start).String()) }
		}
		c.AfterFunc(3*time.Second, at("c"))
		c.AfterFunc(time.Second, at("a"))
		c.AfterFunc(3*time.Second, at("d"))
		c.AfterFunc(2*time.Second, at("b"))
		c.AfterFunc(10*time.Second, at("late"))
		c.Advance(5 * time.Second)
		if want := []string{"a@1s", "b@2s", "c@3s", "d@3s"}; !slices.Equal(got, want) {
			t.Fatalf("fired %v, want %v", got, want)
		}
		if c.Pending() != 1 {
			t.Fatalf("%d pending, want the late one", c.Pending())
		}
		if !c.Now().Equal(start.Add(5 * time.Second)) {
			t.Fatalf("Now() = %v after Advance", c.Now())
		}
	})
	t.Run("a callback may schedule another that falls due within the same advance", func(t *testing.T) {
		c := NewFakeClock(start)
		var got []time.Duration
		c.AfterFunc(time.Second, func() {
			got = append(got, c.Now().Sub(start))
			c.AfterFunc(time.Second, func() { got = append(got, c.Now().Sub(start)) })
		})
		c.Advance(3 * time.Second)
		if want := []time.Duration{time.Second, 2 * time.Second}; !slices.Equal(got, want) {
			t.Fatalf("fired at %v, want %v", got, want)
		}
	})
	t.Run("a stopped timer never fires and reports it was pending once", func(t *testing.T) {
		c := NewFakeClock(start)
		fired := false
		s := c.AfterFunc(time.Second, func() { fired = true })
		if !s.Stop() || s.Stop() {
			t.Fatal("Stop() should be true once, then false")
		}
		c.Advance(time.Hour)
		if fired {
			t.Fatal("stopped timer fired")
		}
	})
	t.Run("stopping a fired timer reports false", func(t *testing.T) {
		c := NewFakeClock(start)
		s := c.AfterFunc(time.Second, func() {})
		c.Advance(time.Second)
		if s.Stop() {
			t.Fatal("Stop() = true after firing")
		}
	})
	t.Run("a timer due now waits for the next advance", func(t *testing.T) {
		c := NewFakeClock(start)
		fired := false
		c.AfterFunc(0, func() { fired = true })
		if fired {
			t.Fatal("fired inside AfterFunc")
		}
		c.Advance(0)
		if !fired {
			t.Fatal("Advance(0) did not fire a due timer")
		}
	})
	t.Run("a negative advance does not move the clock back", func(t *testing.T) {
		c := NewFakeClock(start)
		c.Advance(-time.Hour)
		if !c.Now().Equal(start) {
			t.Fatalf("Now() = %v", c.Now())
		}
	})
	t.Run("concurrent use is safe", func(t *testing.T) {
		c := NewFakeClock(start)
		var mu sync.Mutex
		n := 0
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 50 {
					c.AfterFunc(time.Millisecond, func() { mu.Lock(); n++; mu.Unlock() })
					c.Advance(time.Millisecond)
					_ = c.Now()
				}
			})
		}
		wg.Wait()
		c.Advance(time.Second)
		if n != 200 {
			t.Fatalf("%d callbacks fired, want 200", n)
		}
	})
}
