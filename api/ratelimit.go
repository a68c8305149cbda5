package api

import (
	"math"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
)

// RateLimit is each client's token bucket on TCP: Rate requests a second
// on average, Burst at once. A client is its grant once authenticated,
// else its remote IP (probes, and whoever is guessing tokens).
type RateLimit struct {
	Rate  float64
	Burst int
}

// DefaultRateLimit is generous for scripts and UIs, tight for a guesser.
var DefaultRateLimit = RateLimit{Rate: 20, Burst: 50}

// maxBuckets bounds the limiter's table. When it is full, buckets that
// have refilled (idle clients) are forgotten; if none has, a new client is
// refused as rate-limited rather than growing the table.
const maxBuckets = 4096

type bucket struct {
	tokens float64
	last   time.Time
}

type limiter struct {
	lim RateLimit
	clk clock.Clock
	mu  sync.Mutex
	bks map[string]*bucket
}

func newLimiter(lim RateLimit, clk clock.Clock) *limiter {
	return &limiter{lim: lim, clk: clk, bks: map[string]*bucket{}}
}

// allow takes a token from key's bucket; when there is none it says how
// long until there is.
func (l *limiter) allow(key string) (bool, time.Duration) {
	if l.lim.Rate <= 0 {
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
		b = &bucket{tokens: float64(l.lim.Burst), last: now}
		l.bks[key] = b
	}
	b.refill(now, l.lim)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.lim.Rate * float64(time.Second))
	return false, wait
}

func (b *bucket) refill(now time.Time, lim RateLimit) {
	if el := now.Sub(b.last); el > 0 {
		b.tokens = math.Min(float64(lim.Burst), b.tokens+el.Seconds()*lim.Rate)
		b.last = now
	}
}

// sweep forgets the buckets that are full again: they hold no state worth
// keeping.
func (l *limiter) sweep(now time.Time) {
	for k, b := range l.bks {
		b.refill(now, l.lim)
		if b.tokens >= float64(l.lim.Burst) {
			delete(l.bks, k)
		}
	}
}

// retryAfter rounds a wait up to whole seconds, at least one, as the
// Retry-After header wants.
func retryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
