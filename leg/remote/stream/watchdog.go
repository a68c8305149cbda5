package stream

import (
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
)

// watchdog calls fire once when d passes without a kick. Time spent paused
// (the reader waiting for the consumer, not for the network) does not
// count, so a slow consumer is never mistaken for a dead connection. One
// timer serves any number of kicks: it checks when it fires and re-arms for
// what is left.
type watchdog struct {
	clock clock.Clock
	d     time.Duration
	fire  func()

	mu     sync.Mutex
	last   time.Time
	paused bool
	done   bool
	timer  clock.Stopper
}

// newWatchdog starts a watchdog; it returns nil (a valid, inert watchdog)
// when d <= 0.
func newWatchdog(c clock.Clock, d time.Duration, fire func()) *watchdog {
	if d <= 0 {
		return nil
	}
	w := &watchdog{clock: c, d: d, fire: fire, last: c.Now()}
	w.mu.Lock()
	w.timer = c.AfterFunc(d, w.check)
	w.mu.Unlock()
	return w
}

func (w *watchdog) kick() {
	if w == nil {
		return
	}
	now := w.clock.Now()
	w.mu.Lock()
	w.last = now
	w.mu.Unlock()
}

// pause stops the count until resume; resume restarts it from zero.
func (w *watchdog) pause() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.paused = true
	w.mu.Unlock()
}

func (w *watchdog) resume() {
	if w == nil {
		return
	}
	now := w.clock.Now()
	w.mu.Lock()
	w.paused, w.last = false, now
	w.mu.Unlock()
}

func (w *watchdog) check() {
	now := w.clock.Now()
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return
	}
	left := w.d
	if !w.paused {
		left = w.d - now.Sub(w.last)
	}
	if left <= 0 {
		w.done = true
		w.mu.Unlock()
		w.fire()
		return
	}
	w.timer = w.clock.AfterFunc(left, w.check)
	w.mu.Unlock()
}

func (w *watchdog) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.done = true
	w.timer.Stop()
	w.mu.Unlock()
}
