package leg

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
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

	// Held notices the router could not take at once wait here, in
	// order, for a goroutine (flush, running while backlog is not empty)
	// that hands them on as room comes: a held message waits for a
	// person, and its notice is what reaches them.
	backlog  []message.Event
	flushing sync.WaitGroup

	lost     atomic.Uint64 // notices Notice could not hand on
	logMu    sync.Mutex
	loggedAt time.Time // the last lost-notice log line
	logged   uint64    // lost, as of that line
}

// MaxHeldBacklog bounds the held notices waiting for the router's room;
// past it one is lost (counted). A leg holds at most its MaxHeld messages,
// far fewer.
const MaxHeldBacklog = 1024

// noticeLogEvery bounds the lost-notice log lines: a router behind drops
// many notices in a row, and one line says how many.
const noticeLogEvery = 10 * time.Second

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

// Close makes every later (and waiting) Emit return at once. Held notices
// still waiting are lost (counted); Close returns once the goroutine
// handing them on has stopped.
func (o *Emitter) Close() {
	o.mu.Lock() // offerHeld starts flush under mu: none starts after this
	o.once.Do(func() { close(o.closed) })
	o.mu.Unlock()
	o.flushing.Wait()
}

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
	if out == nil || o.isClosed() {
		return false
	}
	select {
	case out <- o.stamp(ev):
		return true
	default:
		return false
	}
}

// Notice offers a drop or hold notice (Offer): a sender's connection never
// waits on it. A held notice the router has no room for waits in order
// for it (offerHeld), as a person must hear of the message. A lost one is
// counted (Lost) and logged with its cause, at most once per
// noticeLogEvery, saying how many were lost since the last line; the
// sender's receipt never depends on it.
func (o *Emitter) Notice(log *slog.Logger, ev message.Event) bool {
	if ev.Type == message.EventHeld {
		if o.offerHeld(ev) {
			return true
		}
	} else if o.Offer(ev) {
		return true
	}
	o.lost.Add(1)
	cause := "behind"
	switch {
	case o.isClosed():
		cause = "stopping"
	case !o.Attached():
		cause = "not reading yet"
	}
	o.logMu.Lock()
	defer o.logMu.Unlock()
	now := o.now()
	if !o.loggedAt.IsZero() && now.Sub(o.loggedAt) < noticeLogEvery {
		return false
	}
	// The total is read under the lock: a loss counted before the last
	// line was written is already in it, so "since the last line" cannot
	// go below zero, and a line with nothing new is not written.
	total := o.lost.Load()
	if total == o.logged {
		return false
	}
	log.Warn("notices lost: the router did not take them", "cause", cause, "type", string(ev.Type),
		"lost", total-o.logged, "lost_total", total)
	o.loggedAt, o.logged = now, total
	return false
}

// offerHeld hands a held notice on now when the router has room and none
// waits before it, and otherwise queues it behind those that wait (up to
// MaxHeldBacklog), for flush. False when it is lost.
func (o *Emitter) offerHeld(ev message.Event) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.out == nil || o.isClosed() {
		return false
	}
	ev = o.stamp(ev)
	if len(o.backlog) == 0 {
		select {
		case o.out <- ev:
			return true
		default:
		}
	}
	if len(o.backlog) >= MaxHeldBacklog {
		return false
	}
	o.backlog = append(o.backlog, ev)
	if len(o.backlog) == 1 {
		o.flushing.Go(o.flush)
	}
	return true
}

// flush hands the backlog on in order, waiting for the router's room,
// until it is empty or the emitter closes (what is left is lost). It
// takes a notice off and finds the backlog empty under one hold of mu, so
// offerHeld starts another flush only once this one is done with it.
func (o *Emitter) flush() {
	o.mu.Lock()
	for len(o.backlog) > 0 {
		ev, out := o.backlog[0], o.out
		o.mu.Unlock()
		select {
		case out <- ev:
		case <-o.closed:
			o.mu.Lock()
			o.lost.Add(uint64(len(o.backlog)))
			o.backlog = nil
			o.mu.Unlock()
			return
		}
		o.mu.Lock()
		o.backlog = o.backlog[1:]
	}
	o.backlog = nil
	o.mu.Unlock()
}

// Lost is how many notices Notice could not hand on.
func (o *Emitter) Lost() uint64 { return o.lost.Load() }

func (o *Emitter) isClosed() bool {
	select {
	case <-o.closed:
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
