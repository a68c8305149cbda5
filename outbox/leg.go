package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/sessiongateway/gateway/internal/clock"

	"github.com/cenkalti/backoff/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"golang.org/x/sync/errgroup"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// QueuedDetail is the Detail of the receipt Send returns.
const QueuedDetail = "stored; will be retried until the server acknowledges it"

// Defaults of Config.
const (
	DefaultMaxRefusals     = 3
	DefaultMaxAge          = 24 * time.Hour
	DefaultInitialInterval = time.Second
	DefaultMaxInterval     = time.Minute
	DefaultAttemptTimeout  = 5 * time.Minute
	DefaultMaxInFlight     = 4
)

// Config tunes a Leg. Zero values take the defaults.
type Config struct {
	Store  *Store // required; the caller closes it after Run returns
	Clock  clock.Clock
	Logger *slog.Logger
	// Permanent says an error the inner leg's Send returned refuses the
	// message for good (a 404 session, credentials refused). A failed
	// receipt without an error, and any error it does not claim, is
	// retried. Nil claims only errors wrapping backoff.Permanent.
	Permanent func(error) bool
	// MaxRefusals is how many permanent refusals in a row fail an entry;
	// default 3, so a refusal that a fix can lift (a rotated token) gets
	// a little time.
	MaxRefusals int
	// MaxAge fails an entry not acknowledged this long after it was
	// accepted; default 24 h.
	MaxAge time.Duration
	// InitialInterval and MaxInterval shape the exponential backoff
	// between attempts (with jitter); defaults 1 s and 1 min.
	InitialInterval time.Duration
	MaxInterval     time.Duration
	// AttemptTimeout cuts one attempt short; default 5 min (the inner leg
	// has its own, shorter, request timeouts).
	AttemptTimeout time.Duration
	// MaxInFlight bounds attempts at once, each to a different target;
	// default 4.
	MaxInFlight int
	// EventUUID, when set, names the id the server knows a message by
	// (remote.EventUUID), for listings.
	EventUUID func(msgID string) string
}

// Leg is a router.Leg that stores every message before it is accepted and
// delivers it through the inner leg from Run, in order per target, until
// the inner leg says sent.
type Leg struct {
	inner router.Leg
	store *Store
	cfg   Config
	clock clock.Clock
	log   *slog.Logger

	kick chan struct{} // cap 1: one pending wake-up covers any number of sends

	mu    sync.Mutex
	lanes map[string]*lane // by target address

	// unrecorded are attempts the server acknowledged whose write to the
	// store failed: deliver writes them again until it works, so the
	// entry does not stay pending (and is not posted again at the next
	// start). Bounded by the pending entries.
	unrecorded map[string]*retryAck

	resumed []message.Message // pending when opened; set by New only
}

// lane is one target's queue: only its head is attempted, one attempt at
// a time, so the target sees its messages in the order they were accepted.
type lane struct {
	ids  []string  // pending message ids, oldest first
	due  time.Time // when the head may be attempted
	busy bool      // an attempt of the head is under way
	b    *backoff.ExponentialBackOff
}

// retryAck is an acknowledgement still to be written.
type retryAck struct {
	r    result
	due  time.Time
	wait time.Duration
}

// New wraps inner. Every pending entry in the store is queued again, to
// be resumed by Run.
func New(inner router.Leg, cfg Config) (*Leg, error) {
	if inner == nil || cfg.Store == nil {
		return nil, errors.New("outbox: New needs an inner leg and a store")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Permanent == nil {
		cfg.Permanent = func(err error) bool {
			var p *backoff.PermanentError
			return errors.As(err, &p)
		}
	}
	if cfg.MaxRefusals <= 0 {
		cfg.MaxRefusals = DefaultMaxRefusals
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.InitialInterval <= 0 {
		cfg.InitialInterval = DefaultInitialInterval
	}
	if cfg.MaxInterval <= 0 {
		cfg.MaxInterval = DefaultMaxInterval
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = DefaultAttemptTimeout
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	l := &Leg{inner: inner, store: cfg.Store, cfg: cfg, clock: cfg.Clock, log: cfg.Logger,
		kick: make(chan struct{}, 1), lanes: map[string]*lane{}, unrecorded: map[string]*retryAck{}}
	pending, err := cfg.Store.List(false)
	if err != nil {
		return nil, fmt.Errorf("outbox: reading pending messages: %w", err)
	}
	for _, e := range pending {
		// A restart is a reason to try again now, whatever the backoff said.
		l.laneFor(e.Message.To).ids = append(l.laneFor(e.Message.To).ids, e.Message.ID)
		l.resumed = append(l.resumed, e.Message)
	}
	if len(pending) > 0 {
		l.log.Info("outbox: resuming pending messages", "count", len(pending), "file", cfg.Store.Path())
	}
	return l, nil
}

// laneFor returns the lane of target, creating it; l.mu held (or New).
func (l *Leg) laneFor(target string) *lane {
	ln, ok := l.lanes[target]
	if !ok {
		ln = &lane{b: backoff.NewExponentialBackOff(
			backoff.WithInitialInterval(l.cfg.InitialInterval),
			backoff.WithMaxInterval(l.cfg.MaxInterval),
			backoff.WithMaxElapsedTime(0), // MaxAge bounds it instead, across restarts
			backoff.WithClockProvider(l.clock),
		)}
		l.lanes[target] = ln
	}
	return ln
}

// poke wakes Run; a wake-up already pending covers this one.
func (l *Leg) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Resumed lists the messages this outbox found still pending when it was
// opened (accepted before a restart); the router tracks them again so
// their receipts reach watchers and GET /v1/messages/{id}.
func (l *Leg) Resumed() []message.Message { return slices.Clone(l.resumed) }

// Store is the leg's store, which also keeps the control API's
// idempotency keys.
func (l *Leg) Store() *Store { return l.store }

// Name is the inner leg's.
func (l *Leg) Name() message.Protocol { return l.inner.Name() }

// Sessions lists the inner leg's sessions.
func (l *Leg) Sessions(ctx context.Context) ([]message.Session, error) {
	return l.inner.Sessions(ctx)
}

// Send stores m and answers queued; the write is on disk before it
// returns. When the store refuses (full, or the write failed) the receipt
// is failed and the error says why: nothing was accepted.
func (l *Leg) Send(ctx context.Context, m message.Message) (message.Receipt, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Under l.mu, so the lane's order is the store's order.
	trace := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, trace)
	e, err := l.store.Add(Entry{Message: m, Leg: l.inner.Name(), AcceptedAt: l.clock.Now(), Trace: trace})
	if errors.Is(err, ErrExists) {
		// The same message again (an idempotent retry of a send that was
		// accepted before a restart): it is not stored or sent twice.
		return l.stored(m.ID)
	}
	if err != nil {
		err = fmt.Errorf("%w: %w", router.ErrNotAccepted, err)
		return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: err.Error(), Time: l.clock.Now()}, err
	}
	ln := l.laneFor(m.To)
	ln.ids = append(ln.ids, m.ID)
	l.poke()
	return message.Receipt{MsgID: m.ID, Status: message.StatusQueued, Detail: QueuedDetail, Time: e.AcceptedAt}, nil
}

// stored answers a Send of a message the store already holds with where
// it stands: queued while pending, its final receipt once finished.
func (l *Leg) stored(id string) (message.Receipt, error) {
	e, err := l.store.Get(id)
	switch {
	case err != nil:
		err = fmt.Errorf("%w: %w", router.ErrNotAccepted, err)
		return message.Receipt{MsgID: id, Status: message.StatusFailed, Reason: err.Error(), Time: l.clock.Now()}, err
	case e.State == StatePending:
		return message.Receipt{MsgID: id, Status: message.StatusQueued, Detail: QueuedDetail, Time: e.AcceptedAt}, nil
	case e.Receipt != nil:
		return *e.Receipt, nil
	default:
		return failedReceipt(id, e, e.FinishedAt), nil
	}
}

// Run runs the inner leg and delivers stored messages until ctx ends.
func (l *Leg) Run(ctx context.Context, in chan<- message.Event) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return l.inner.Run(ctx, in) })
	g.Go(func() error { l.deliver(ctx, in); return nil })
	return g.Wait()
}

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
			if ev, ok := l.record(r); ok {
				select {
				case in <- ev:
				case <-ctx.Done():
					return
				}
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
			e.State, e.Failure, e.FinishedAt, e.LastError = StateFailed, FailGone, now, r.lost.Error()
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
				e.State, e.Failure, e.FinishedAt, e.NextAttempt = StateFailed, FailRefused, now, time.Time{}
			case now.Sub(e.AcceptedAt) >= l.cfg.MaxAge:
				e.State, e.Failure, e.FinishedAt, e.NextAttempt = StateFailed, FailExpired, now, time.Time{}
			default:
				e.NextAttempt = now.Add(retryd)
			}
		})
		pop = err == nil && e.State == StateFailed
		if err == nil && e.State == StatePending {
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
			l.unrecorded[r.id] = &retryAck{r: r, due: now.Add(l.cfg.InitialInterval), wait: l.cfg.InitialInterval}
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
		e.State, e.FinishedAt, e.Receipt, e.LastError, e.NextAttempt = StateAcked, now, &rc, "", time.Time{}
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
			a.wait = min(2*a.wait, l.cfg.MaxInterval)
			a.due = l.clock.Now().Add(a.wait)
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
	case FailRefused:
		reason = fmt.Sprintf("refused by the server after %d attempts: %s", e.Attempts, e.LastError)
	case FailExpired:
		reason = fmt.Sprintf("not acknowledged by the server within %v (%d attempts): %s",
			now.Sub(e.AcceptedAt).Round(time.Second), e.Attempts, e.LastError)
	case FailGone:
		reason = "the outbox could not read the message back: " + e.LastError
	}
	return message.Receipt{MsgID: id, Status: message.StatusFailed, Reason: reason, Detail: e.Failure.String(), Time: now}
}

// Item is one outbox entry as `gateway outbox` shows it.
type Item struct {
	ID            string           `json:"id"`
	To            string           `json:"to"`
	ToName        string           `json:"to_name,omitempty"`
	Leg           message.Protocol `json:"leg"`
	Preview       string           `json:"body_preview"`
	State         State            `json:"state"`
	Attempts      int              `json:"attempts"`
	LastError     string           `json:"last_error,omitempty"`
	Failure       FailReason       `json:"failure,omitempty"`
	AcceptedAt    time.Time        `json:"accepted_at"`
	NextAttemptAt time.Time        `json:"next_attempt_at,omitzero"`
	FinishedAt    time.Time        `json:"finished_at,omitzero"`
	EventUUID     string           `json:"event_uuid,omitempty"`
}

// previewRunes bounds Item.Preview.
const previewRunes = 80

// Preview is the start of body on one line, for a table.
func Preview(body string) string {
	var b strings.Builder
	n := 0
	for _, r := range body {
		if n == previewRunes {
			b.WriteString("…")
			break
		}
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// Outbox lists the pending entries, oldest first; with all, the kept
// acked and failed ones too.
func (l *Leg) Outbox(all bool) ([]Item, error) {
	es, err := l.store.List(all)
	if err != nil {
		return nil, err
	}
	items := make([]Item, len(es))
	for i, e := range es {
		items[i] = Item{
			ID: e.Message.ID, To: e.Message.To, ToName: e.Message.ToName, Leg: e.Leg,
			Preview: Preview(e.Message.Body), State: e.State, Attempts: e.Attempts,
			LastError: e.LastError, Failure: e.Failure, AcceptedAt: e.AcceptedAt,
			NextAttemptAt: e.NextAttempt, FinishedAt: e.FinishedAt,
		}
		if l.cfg.EventUUID != nil {
			items[i].EventUUID = l.cfg.EventUUID(e.Message.ID)
		}
	}
	return items, nil
}
