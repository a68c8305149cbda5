package stream

import (
	"context"
	"time"

	"github.com/sessiongateway/gateway/leg/remote/wire"
)

// Run connects and keeps the session live until ctx ends (returns nil then)
// or it gives up: a *GiveUpError after MaxRetries consecutive failed
// attempts, a *PermanentError at once for 400/401/403/404 on the dial or
// WebSocket close codes 1002/4001/4003. Updates go to out with a blocking
// send: backpressure is the full policy (a slow consumer makes the server
// shed us with 1008, after which replay and recovery lose nothing). onLink,
// if not nil, is called on the Run goroutine at every state change. Every
// goroutine Run starts has stopped when it returns.
func (s *Stream) Run(ctx context.Context, out chan<- Update, onLink func(Link)) error {
	return s.RunFunc(ctx, ToChannel(out), onLink)
}

// RunFunc is Run handing each update to deliver (see Deliver), so a
// consumer needs no goroutine and no queue of its own.
func (s *Stream) RunFunc(ctx context.Context, out Deliver, onLink func(Link)) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer s.running.Store(false)
	if onLink == nil {
		onLink = func(Link) {}
	}
	failures, backoff := 0, newReconnect(s.cfg.Backoff, s.clock)
	for {
		// One connection: open it, recover what was missed, deliver until
		// it ends. An idle stream waits in readLoop for the server, and the
		// depth of that wait sets the size of the stream's one stack, most
		// of what an idle stream costs: so it is called from here, with
		// the work in helpers off the waiting frames.
		a, res := s.connect(ctx, out, onLink)
		if a != nil {
			if a.start() {
				a.readErr = a.c.readLoop(a.connCtx, a.lv, a.emit, a.bad)
			}
			res = a.finish()
		}
		if done, err := s.after(ctx, res, &failures, backoff, onLink); done {
			return err
		}
	}
}

// after handles how a connection ended: go dormant, give up, or wait
// before the next attempt. done says Run returns err. Apart from RunFunc
// so that its frame is not under an idle stream's wait (see RunFunc).
//
//go:noinline
func (s *Stream) after(ctx context.Context, res outcome, failures *int, backoff *reconnect, onLink func(Link)) (done bool, err error) {
	s.drainWake()
	if ctx.Err() != nil {
		return true, nil
	}
	if res.idle {
		*failures = 0
		backoff.fresh()
		if !s.dormant(ctx, func() { onLink(Link{State: LinkDormant}) }) {
			return true, nil
		}
		return false, nil
	}
	ce := res.err
	if ce.permanent() {
		err := &PermanentError{SessionID: s.cfg.SessionID, Err: ce}
		onLink(Link{State: LinkGaveUp, Attempt: *failures + 1, Err: err})
		return true, err
	}
	if res.healthy {
		*failures = 0
		backoff.healthy()
	} else {
		*failures++
	}
	if s.cfg.MaxRetries > 0 && *failures >= s.cfg.MaxRetries {
		err := &GiveUpError{SessionID: s.cfg.SessionID, Attempts: *failures, Last: ce}
		onLink(Link{State: LinkGaveUp, Attempt: *failures, Err: err})
		return true, err
	}
	// The server's retry: is capped as Retry-After is: a huge one would
	// otherwise park the stream for years.
	wait := max(backoff.next(), ce.RetryAfter, min(res.retryFloor, maxRetryAfter))
	s.logger().Info("remote stream lost", "err", ce, "attempt", *failures, "retry_in", wait)
	l := Link{State: LinkReconnecting, Attempt: *failures, Err: ce, Delay: wait}
	if wait <= 0 {
		onLink(l)
		return false, nil
	}
	// onLink runs once the wait is armed, so that a test clock advanced
	// from it finds the timer.
	return !s.sleep(ctx, wait, func() { onLink(l) }), nil
}

// sleep waits d on the clock, or until Wake; it reports false when ctx
// ended first. armed, if not nil, runs once the timer is set.
func (s *Stream) sleep(ctx context.Context, d time.Duration, armed func()) bool {
	fired := make(chan struct{})
	t := s.clock.AfterFunc(d, func() { close(fired) })
	defer t.Stop()
	if armed != nil {
		armed()
	}
	select {
	case <-ctx.Done():
		return false
	case <-s.wake:
		return true
	case <-fired:
		return true
	}
}

// dormant waits for Wake, or for History to show events we have not seen,
// polling every DormantPoll. It reports false when ctx ended first.
func (s *Stream) dormant(ctx context.Context, notify func()) bool {
	poll := s.cfg.DormantPoll > 0 && s.cfg.History != nil
	for {
		if !poll {
			notify()
			select {
			case <-ctx.Done():
				return false
			case <-s.wake:
				return true
			}
		}
		fired := make(chan struct{})
		t := s.clock.AfterFunc(s.cfg.DormantPoll, func() { close(fired) })
		notify()
		notify = func() {}
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-s.wake:
			t.Stop()
			return true
		case <-fired:
		}
		news, err := s.hasNew(ctx)
		if err != nil {
			s.logger().Debug("dormant poll failed", "err", err)
		}
		if news {
			return true
		}
	}
}

// hasNew reports whether History holds an event the stream has not delivered.
func (s *Stream) hasNew(ctx context.Context) (bool, error) {
	if s.cfg.Transport == TransportSSE {
		evs, _, err := s.cfg.History.CodeEventsAfter(ctx, s.cfg.SessionID, s.lastSeq)
		if err != nil {
			return false, err
		}
		for _, raw := range evs {
			if seq, ok := wire.SequenceOf(raw); ok && seq > s.lastSeq {
				return true, nil
			}
		}
		return false, nil
	}
	evs, _, err := s.cfg.History.EventsAfter(ctx, s.cfg.SessionID, s.lastID)
	if err != nil && s.lastID != s.histID {
		// History may not know a live-only event; ask from the last one it gave.
		evs, _, err = s.cfg.History.EventsAfter(ctx, s.cfg.SessionID, s.histID)
	}
	if err != nil {
		return false, err
	}
	for _, raw := range evs {
		if id := wire.UUIDOf(raw); id == "" || !s.win.has(id) {
			return true, nil
		}
	}
	return false, nil
}
