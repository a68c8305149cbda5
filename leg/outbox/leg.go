package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"golang.org/x/sync/errgroup"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
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
	inner leg.Leg
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
	r   result
	due time.Time
	b   backoff.BackOff // doubling from InitialInterval to MaxInterval
}

// New wraps inner. Every pending entry in the store is queued again, to
// be resumed by Run.
func New(inner leg.Leg, cfg Config) (*Leg, error) {
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
		err = fmt.Errorf("%w: %w", message.ErrNotAccepted, err)
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
		err = fmt.Errorf("%w: %w", message.ErrNotAccepted, err)
		return message.Receipt{MsgID: id, Status: message.StatusFailed, Reason: err.Error(), Time: l.clock.Now()}, err
	case e.State == message.OutboxPending:
		return message.Receipt{MsgID: id, Status: message.StatusQueued, Detail: QueuedDetail, Time: e.AcceptedAt}, nil
	case e.Receipt != nil:
		return *e.Receipt, nil
	default:
		return failedReceipt(id, e, e.FinishedAt), nil
	}
}

// Recall is where a message the store holds stands, for a retry of its
// send the router no longer tracks (router.Recaller): found is false when
// the store has no such message (never taken, or finished long ago).
func (l *Leg) Recall(id string) (m message.Message, rc message.Receipt, found bool) {
	e, err := l.store.Get(id)
	if err != nil {
		return message.Message{}, message.Receipt{}, false
	}
	rc, err = l.stored(id)
	return e.Message, rc, err == nil
}

// Run runs the inner leg and delivers stored messages until ctx ends.
func (l *Leg) Run(ctx context.Context, in chan<- message.Event) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return l.inner.Run(ctx, in) })
	g.Go(func() error { l.deliver(ctx, in); return nil })
	return g.Wait()
}
