package fakecloud

import (
	"sync"
	"time"

	"github.com/sessiongateway/gateway/transport/uds"
)

// Stopper cancels a pending AfterFunc.
type Stopper = uds.Stopper

// Clock is the fake's time source: timestamps, the request log, keep-alives,
// pings, scripted delays, token lifetimes and the echo worker's pace all read
// it. It is the local legs' clock, so testkit/clock.FakeClock lets a test
// move time by hand.
type Clock = uds.Clock

// after returns a channel closed d from now on c, and the timer, which the
// caller stops when it stops waiting.
func after(c Clock, d time.Duration) (<-chan struct{}, Stopper) {
	ch := make(chan struct{})
	return ch, c.AfterFunc(d, func() { close(ch) })
}

// ticker ticks every d on a Clock. Its channel holds one tick: ticks that
// find it full are merged, as a slow reader needs only one.
type ticker struct {
	c    chan struct{}
	mu   sync.Mutex
	t    Stopper
	done bool
}

// newTicker starts a ticker; a non-positive d gives a ticker that never ticks.
func newTicker(c Clock, d time.Duration) *ticker {
	t := &ticker{c: make(chan struct{}, 1)}
	if d <= 0 {
		t.done = true
		return t
	}
	var arm func()
	arm = func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.done {
			return
		}
		t.t = c.AfterFunc(d, func() {
			select {
			case t.c <- struct{}{}:
			default:
			}
			arm()
		})
	}
	arm()
	return t
}

// C is the tick channel.
func (t *ticker) C() <-chan struct{} { return t.c }

// Stop ends the ticker; a callback already running re-arms nothing.
func (t *ticker) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	if t.t != nil {
		t.t.Stop()
	}
}
