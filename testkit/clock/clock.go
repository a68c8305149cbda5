package clock

import (
	"slices"
	"sync"
	"time"
)

// Stopper cancels a pending AfterFunc; *time.Timer is one.
type Stopper = interface{ Stop() bool }

// FakeClock stands still until Advance moves it. Callbacks registered with
// AfterFunc run synchronously inside Advance, on the caller's goroutine, in
// order of due time (ties in registration order), with Now equal to their due
// time. It is safe for concurrent use; callbacks may call it back.
type FakeClock struct {
	advance sync.Mutex // serialises Advance so callbacks fire in order

	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*fakeTimer // pending, unsorted
}

type fakeTimer struct {
	c   *FakeClock
	at  time.Time
	seq uint64
	f   func()
}

// NewFakeClock starts a clock at start; the zero time is replaced by a fixed
// date so tests never depend on the zero time's quirks.
func NewFakeClock(start time.Time) *FakeClock {
	if start.IsZero() {
		start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	}
	return &FakeClock{now: start}
}

// Now returns the clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f for Now()+d. A non-positive d is due at once but, unlike
// time.AfterFunc, still waits for the next Advance (Advance(0) will do), so a
// caller holding a lock never runs f re-entrantly.
func (c *FakeClock) AfterFunc(d time.Duration, f func()) Stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{c: c, at: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return t
}

// Stop cancels the timer and reports whether it was still pending.
func (t *fakeTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	return true
}

// Advance moves the clock forward by d (a negative d is treated as zero),
// firing every timer that falls due on the way, including timers that those
// callbacks schedule inside the window.
func (c *FakeClock) Advance(d time.Duration) {
	if d < 0 {
		d = 0
	}
	c.advance.Lock()
	defer c.advance.Unlock()
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		t := c.popDue(target)
		if t == nil {
			break
		}
		t.f()
	}
	c.mu.Lock()
	c.now = target
	c.mu.Unlock()
}

// popDue removes and returns the earliest timer due at or before target, and
// moves the clock to its due time.
func (c *FakeClock) popDue(target time.Time) *fakeTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return nil
	}
	i := 0
	for j, p := range c.timers {
		if p.at.Before(c.timers[i].at) || p.at.Equal(c.timers[i].at) && p.seq < c.timers[i].seq {
			i = j
		}
	}
	t := c.timers[i]
	if t.at.After(target) {
		return nil
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	if t.at.After(c.now) {
		c.now = t.at
	}
	return t
}

// Pending reports how many timers have not fired or been stopped.
func (c *FakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
