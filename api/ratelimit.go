package api

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sessiongateway/gateway/internal/clock"
)

// Config.RateLimit is each client's token bucket on TCP: Rate requests a
// second on average, Burst at once. A client is its grant once
// authenticated, else its remote IP (probes, and whoever is guessing
// tokens). A Rate of zero or less turns the limit off (NoRateLimit); the
// zero Bucket in a Config means DefaultRateLimit.

// DefaultRateLimit is generous for scripts and UIs, tight for a guesser.
var DefaultRateLimit = clock.Bucket{Rate: 20, Burst: 50}

// NoRateLimit lets every client make as many requests as it likes.
var NoRateLimit = clock.Bucket{Rate: -1}

// maxBuckets bounds the limiter's table. When it is full, buckets that
// have refilled (idle clients) are forgotten; if none has, a new client is
// refused as rate-limited rather than growing the table.
const maxBuckets = 4096

// limiter keeps one rate.Limiter per client. The limiters are asked with
// the injected clock's time, so tests step time instead of sleeping.
type limiter struct {
	lim clock.Bucket
	clk clock.Clock
	mu  sync.Mutex
	bks map[string]*rate.Limiter
}

func newLimiter(lim clock.Bucket, clk clock.Clock) *limiter {
	return &limiter{lim: lim, clk: clk, bks: map[string]*rate.Limiter{}}
}

// allow takes a token from key's bucket; when there is none it says how
// long until there is.
func (l *limiter) allow(key string) (bool, time.Duration) {
	if l.lim.Off() {
		return true, 0
	}
	now := l.clk.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.bks[key]
	if !ok {
		if len(l.bks) >= maxBuckets {
			l.sweep(now)
		}
		if len(l.bks) >= maxBuckets {
			return false, time.Second
		}
		b = l.lim.Limiter()
		l.bks[key] = b
	}
	r := b.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Second // a burst below one: never
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now) // a refused request costs nothing
		return false, d
	}
	return true, 0
}

// sweep forgets the buckets that are full again: they hold no state worth
// keeping.
func (l *limiter) sweep(now time.Time) {
	for k, b := range l.bks {
		if clock.Full(b, now) {
			delete(l.bks, k)
		}
	}
}

// retryAfter rounds a wait up to whole seconds, at least one, as the
// Retry-After header wants.
func retryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
