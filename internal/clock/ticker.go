package clock

import (
	"sync"
	"time"
)

// Ticker sends c's time on C every period, as time.Ticker does: C holds
// one tick, and a tick its reader has not taken yet is not doubled. The
// ticks keep to the grid of the first one; a reader that was away longer
// than a period gets one tick, not one per period missed.
type Ticker struct {
	C <-chan time.Time

	c      chan time.Time
	clk    Clock
	period time.Duration

	mu      sync.Mutex
	next    time.Time // due time of the pending tick
	timer   Stopper
	stopped bool
}

// NewTicker starts a Ticker on c with period d, which must be positive
// (as time.NewTicker's must).
func NewTicker(c Clock, d time.Duration) *Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	ch := make(chan time.Time, 1)
	t := &Ticker{C: ch, c: ch, clk: c, period: d}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next = c.Now().Add(d)
	t.timer = c.AfterFunc(d, t.tick)
	return t
}

func (t *Ticker) tick() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	now := t.clk.Now()
	select {
	case t.c <- now:
	default: // the last tick is still unread
	}
	for !t.next.After(now) {
		t.next = t.next.Add(t.period)
	}
	t.timer = t.clk.AfterFunc(t.next.Sub(now), t.tick)
}

// Stop turns the ticker off: no tick is sent after it returns. C is not
// closed, as time.Ticker's is not.
func (t *Ticker) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	t.timer.Stop()
}
