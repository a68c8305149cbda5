package uds

import (
	"context"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/message"
)

// Emitter hands a leg's events to the router's queue. Emit waits for room
// (the legs turn messages away with queue-full before the queue can fill,
// so the wait is short) until the caller's context ends or the emitter is
// closed; after Close nothing waits, so no goroutine can hang on a router
// that has stopped reading.
type Emitter struct {
	leg message.Protocol
	now func() time.Time

	mu     sync.Mutex
	out    chan<- message.Event
	closed chan struct{}
	once   sync.Once
}

// NewEmitter returns an emitter stamping events with leg and now().
func NewEmitter(leg message.Protocol, now func() time.Time) *Emitter {
	return &Emitter{leg: leg, now: now, closed: make(chan struct{})}
}

// Attach starts handing events to out.
func (o *Emitter) Attach(out chan<- message.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.out = out
}

// Attached reports whether Attach was called.
func (o *Emitter) Attached() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.out != nil
}

// Pending is how many events wait in the router's queue.
func (o *Emitter) Pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.out)
}

// Close makes every later (and waiting) Emit return at once.
func (o *Emitter) Close() { o.once.Do(func() { close(o.closed) }) }

// Emit stamps ev and hands it on; false when it could not (not attached,
// ctx done, or closed).
func (o *Emitter) Emit(ctx context.Context, ev message.Event) bool {
	o.mu.Lock()
	out := o.out
	o.mu.Unlock()
	if out == nil {
		return false
	}
	ev = o.stamp(ev)
	select {
	case out <- ev:
		return true
	case <-ctx.Done():
	case <-o.closed:
	}
	return false
}

// Offer hands ev on only if the router's queue has room now: for notices
// (drops, holds) that a sender's connection must never wait on. False when
// the queue is full, or the emitter is not attached or closed: the notice is
// lost, which the caller logs.
func (o *Emitter) Offer(ev message.Event) bool {
	o.mu.Lock()
	out := o.out
	o.mu.Unlock()
	if out == nil {
		return false
	}
	select {
	case <-o.closed:
		return false
	default:
	}
	select {
	case out <- o.stamp(ev):
		return true
	default:
		return false
	}
}

func (o *Emitter) stamp(ev message.Event) message.Event {
	ev.Leg = o.leg
	if ev.Time.IsZero() {
		ev.Time = o.now()
	}
	return ev
}
