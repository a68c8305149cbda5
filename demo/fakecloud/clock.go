package fakecloud

import (
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
)

// ticker ticks every d on a Clock. Its channel holds one tick: ticks that
// find it full are merged, as a slow reader needs only one.
type ticker struct {
	c    chan struct{}
	mu   sync.Mutex
	t    clock.Stopper
	done bool
}

// newTicker starts a ticker; a non-positive d gives a ticker that never ticks.
func newTicker(c clock.Clock, d time.Duration) *ticker {
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
