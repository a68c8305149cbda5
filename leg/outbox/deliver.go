package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// result is what one attempt came to.
type result struct {
	id     string
	target string
	rc     message.Receipt
	err    error // from the inner leg's Send
	lost   error // the entry could not be read: nothing was sent
}

// deliver starts an attempt for every lane whose head is due, and records
// each attempt's result, until ctx ends. Attempts still under way then are
// waited for; those that got through are recorded, unpublished (the
// others were cut short by the shutdown and do not count).
func (l *Leg) deliver(ctx context.Context, in chan<- message.Event) {
	em := leg.NewEmitter(l.inner.Name(), l.clock.Now)
	em.Attach(in)
	defer em.Close()
	// Each attempt sends exactly one result and at most MaxInFlight run,
	// so an attempt never waits to hand in its result.
	results := make(chan result, l.cfg.MaxInFlight)
	var (
		wg       sync.WaitGroup
		inflight int
		timer    clock.Stopper
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		wg.Wait()
		close(results)
		for r := range results {
			if r.acked() {
				l.record(r)
			}
		}
		l.recordAcks(time.Time{}) // a last try for any still unwritten
	}()
	for {
		now := l.clock.Now()
		next := l.recordAcks(now)
		l.mu.Lock()
		for target, ln := range l.lanes {
			switch {
			case len(ln.ids) == 0 && !ln.busy:
				delete(l.lanes, target)
			case ln.busy || len(ln.ids) == 0:
			case ln.due.After(now):
				if next.IsZero() || ln.due.Before(next) {
					next = ln.due
				}
			case inflight < l.cfg.MaxInFlight:
				ln.busy = true
				inflight++
				id := ln.ids[0]
				wg.Add(1)
				go func() {
					defer wg.Done()
					results <- l.attempt(ctx, target, id)
				}()
			}
		}
		l.mu.Unlock()
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		if !next.IsZero() {
			timer = l.clock.AfterFunc(next.Sub(now), l.poke)
		}
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		case r := <-results:
			inflight--
			if ctx.Err() != nil && !r.acked() {
				// Cut short by the shutdown, which select may have seen
				// second: it does not count, as in the drain below.
				return
			}
			if ev, ok := l.record(r); ok && !em.Emit(ctx, ev) {
				return
			}
		}
	}
}

// acked says the inner leg took the message.
func (r result) acked() bool {
	return r.lost == nil && r.err == nil && r.rc.Status != message.StatusFailed && r.rc.Status != 0
}

// attempt sends the stored message id through the inner leg once.
func (l *Leg) attempt(ctx context.Context, target, id string) result {
	r := result{id: id, target: target}
	e, err := l.store.Get(id)
	if err != nil {
		r.lost = err
		return r
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := l.clock.AfterFunc(l.cfg.AttemptTimeout, cancel)
	defer t.Stop()
	if len(e.Trace) > 0 {
		ctx = otel.GetTextMapPropagator().Extract(ctx, propagation.MapCarrier(e.Trace))
	}
	// The whole message as accepted: the same id (so the same event uuid)
	// and the same sender, whom the inner leg may route an answer back to.
	r.rc, r.err = l.inner.Send(ctx, e.Message)
	r.rc.MsgID = id
	return r
}

// record writes what an attempt came to, moves its lane on, and returns
// the receipt event to publish when the entry was finished.
func (l *Leg) record(r result) (message.Event, bool) {
	now := l.clock.Now()
	ok := r.acked()
	var (
		e      Entry
		err    error
		pop    bool
		retryd time.Duration
	)
	switch {
	case r.lost != nil:
		// Nothing was sent and nothing can be: fail it if it is there at all.
		e, err = l.store.Update(r.id, func(e *Entry) {
			e.State, e.Failure, e.FinishedAt, e.LastError = message.OutboxFailed, message.OutboxGone, now, r.lost.Error()
		})
		pop = true
		if errors.Is(err, ErrNotFound) {
			err = nil
		}
	case ok:
		rc := r.rc
		if rc.Time.IsZero() {
			rc.Time = now
		}
		e, err = l.store.Update(r.id, ack(rc, now))
		pop = true
		if err == nil && e.Receipt == nil {
			e.Receipt = &rc
		}
	default:
		reason := r.rc.Reason
		if r.err != nil && reason == "" {
			reason = r.err.Error()
		}
		if reason == "" {
			reason = "the leg gave no reason"
		}
		permanent := r.err != nil && l.cfg.Permanent(r.err)
		l.mu.Lock()
		if ln, found := l.lanes[r.target]; found {
			retryd = ln.b.NextBackOff()
		}
		l.mu.Unlock()
		e, err = l.store.Update(r.id, func(e *Entry) {
			e.Attempts++
			e.LastError = reason
			if permanent {
				e.Refusals++
			} else {
				e.Refusals = 0
			}
			switch {
			case e.Refusals >= l.cfg.MaxRefusals:
				e.State, e.Failure, e.FinishedAt, e.NextAttempt = message.OutboxFailed, message.OutboxRefused, now, time.Time{}
			case now.Sub(e.AcceptedAt) >= l.cfg.MaxAge:
				e.State, e.Failure, e.FinishedAt, e.NextAttempt = message.OutboxFailed, message.OutboxExpired, now, time.Time{}
			default:
				e.NextAttempt = now.Add(retryd)
			}
		})
		pop = err == nil && e.State == message.OutboxFailed
		if err == nil && e.State == message.OutboxPending {
			l.log.Info("outbox: attempt failed; will retry", "msg_id", r.id, "to", r.target,
				"attempt", e.Attempts, "retry_in", retryd, "permanent", permanent, "err", reason)
		}
	}
	if err != nil {
		// The entry stays pending on disk. A delivered message is moved on
		// anyway: sending it again now would only repeat it. Its
		// acknowledgement is written again until that works (recordAcks).
		l.log.Error("outbox: recording an attempt failed", "msg_id", r.id, "err", err)
		if ok {
			l.mu.Lock()
			b := clock.Backoff{Initial: l.cfg.InitialInterval, Max: l.cfg.MaxInterval}.New(l.clock)
			l.unrecorded[r.id] = &retryAck{r: r, due: now.Add(b.NextBackOff()), b: b}
			l.mu.Unlock()
		}
		pop = pop || ok
		if !pop {
			retryd = l.cfg.MaxInterval
		}
	}
	l.mu.Lock()
	ln := l.laneFor(r.target)
	ln.busy = false
	if pop {
		if len(ln.ids) > 0 && ln.ids[0] == r.id {
			ln.ids = ln.ids[1:]
		}
		ln.b.Reset()
		ln.due = time.Time{}
	} else {
		ln.due = now.Add(retryd)
	}
	l.mu.Unlock()
	if !pop {
		return message.Event{}, false
	}
	var rc message.Receipt
	switch {
	case ok:
		rc = r.rc
		if e.Receipt != nil {
			rc = *e.Receipt
		}
	default:
		rc = failedReceipt(r.id, e, now)
	}
	return message.Event{Type: message.EventReceipt, Leg: l.inner.Name(), Time: now, Receipt: &rc}, true
}

// ack finishes an entry as acknowledged with the receipt rc.
func ack(rc message.Receipt, now time.Time) func(*Entry) {
	return func(e *Entry) {
		e.Attempts++
		e.State, e.FinishedAt, e.Receipt, e.LastError, e.NextAttempt = message.OutboxAcked, now, &rc, "", time.Time{}
	}
}

// recordAcks writes again the acknowledgements due by now (all of them
// for a zero now) whose write failed, backing off each up to MaxInterval,
// and returns when the next is due (zero for none).
func (l *Leg) recordAcks(now time.Time) time.Time {
	l.mu.Lock()
	var due []*retryAck
	for _, a := range l.unrecorded {
		if now.IsZero() || !a.due.After(now) {
			due = append(due, a)
		}
	}
	l.mu.Unlock()
	for _, a := range due {
		rc := a.r.rc
		if rc.Time.IsZero() {
			rc.Time = l.clock.Now()
		}
		_, err := l.store.Update(a.r.id, ack(rc, rc.Time))
		l.mu.Lock()
		if err == nil || errors.Is(err, ErrNotFound) {
			delete(l.unrecorded, a.r.id)
		} else {
			a.due = l.clock.Now().Add(a.b.NextBackOff())
		}
		l.mu.Unlock()
		if err != nil && !errors.Is(err, ErrNotFound) {
			l.log.Warn("outbox: writing an acknowledgement failed again; will retry", "msg_id", a.r.id, "err", err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var next time.Time
	for _, a := range l.unrecorded {
		if next.IsZero() || a.due.Before(next) {
			next = a.due
		}
	}
	return next
}

func failedReceipt(id string, e Entry, now time.Time) message.Receipt {
	reason := e.LastError
	switch e.Failure {
	case message.OutboxRefused:
		reason = fmt.Sprintf("refused by the server after %d attempts: %s", e.Attempts, e.LastError)
	case message.OutboxExpired:
		reason = fmt.Sprintf("not acknowledged by the server within %v (%d attempts): %s",
			now.Sub(e.AcceptedAt).Round(time.Second), e.Attempts, e.LastError)
	case message.OutboxGone:
		reason = "the outbox could not read the message back: " + e.LastError
	}
	return message.Receipt{MsgID: id, Status: message.StatusFailed, Reason: reason, Detail: e.Failure.String(), Time: now}
}
