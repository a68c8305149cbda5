package clock

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Backoff is the shape of a retrying loop's waits, every loop's bounds in
// one type: an exponential backoff (github.com/cenkalti/backoff) that
// measures its elapsed time on a Clock, so a test's fake clock drives it.
type Backoff struct {
	Initial    time.Duration // the first wait
	Max        time.Duration // no interval grows past it; 0 for no cap
	Multiplier float64       // each interval is the last one times it; 0 for 2
	// Jitter draws each wait within ±Jitter of its interval (0.5: from
	// half to one and a half times it); 0 for none.
	Jitter float64
	// Spread adds up to this much, at random, to each wait, so that many
	// loops that failed together do not all try again together; 0 for none.
	Spread     time.Duration
	MaxElapsed time.Duration // stop before a wait that would end past this long since the start or a Reset; 0 never
	MaxRetries int           // stop after this many waits since the start or a Reset; 0 never
}

// New returns a backoff.BackOff of b's bounds, reset, that tells elapsed
// time by c. It is not safe for concurrent use.
func (b Backoff) New(c Clock) backoff.BackOff {
	e := &backoff.ExponentialBackOff{
		InitialInterval:     b.Initial,
		RandomizationFactor: b.Jitter,
		Multiplier:          b.Multiplier,
		MaxInterval:         b.Max,
		MaxElapsedTime:      b.MaxElapsed,
		Stop:                backoff.Stop,
		Clock:               Or(c),
	}
	if e.Multiplier == 0 {
		e.Multiplier = 2
	}
	if e.MaxInterval == 0 {
		e.MaxInterval = math.MaxInt64
	}
	e.Reset()
	var out backoff.BackOff = e
	if b.Spread > 0 {
		out = &spread{BackOff: out, d: b.Spread}
	}
	if b.MaxRetries > 0 {
		out = backoff.WithMaxRetries(out, uint64(b.MaxRetries))
	}
	return out
}

// spread adds up to d at random to every wait of its BackOff.
type spread struct {
	backoff.BackOff
	d time.Duration
}

func (s *spread) NextBackOff() time.Duration {
	w := s.BackOff.NextBackOff()
	if w == backoff.Stop {
		return w
	}
	return w + rand.N(s.d)
}

// Retry calls op until it returns nil; an error wrapped by
// backoff.Permanent, which it returns unwrapped; or an error after which b
// says stop, which it returns. It waits b's waits on c, and returns
// ctx.Err() if ctx ends first. notify, when not nil, hears each error that
// is retried and the wait before the next call.
func Retry(ctx context.Context, c Clock, b backoff.BackOff, op func() error, notify func(err error, wait time.Duration)) error {
	return backoff.RetryNotifyWithTimer(op, backoff.WithContext(b, ctx), notify, &timer{c: Or(c)})
}

// timer is a backoff.Timer on a Clock.
type timer struct {
	c  Clock
	ch chan time.Time
	s  Stopper
}

func (t *timer) Start(d time.Duration) {
	t.Stop()
	ch := make(chan time.Time, 1) // the one send never blocks the clock
	t.ch = ch
	c := t.c
	t.s = c.AfterFunc(d, func() { ch <- c.Now() })
}

func (t *timer) Stop() {
	if t.s != nil {
		t.s.Stop()
	}
}

func (t *timer) C() <-chan time.Time { return t.ch }
