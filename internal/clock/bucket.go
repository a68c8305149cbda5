package clock

import (
	"time"

	"golang.org/x/time/rate"
)

// Bucket is a token bucket's shape, the one type every rate limit is
// configured with: Burst tokens at most, Rate of them earned back a second.
// Its limiter is golang.org/x/time/rate's, asked with a Clock's times
// (AllowN(now, 1), TokensAt(now)) so that a test's fake clock drives it.
type Bucket struct {
	Rate  float64 // tokens earned back a second
	Burst int     // tokens at most, and at the start
}

// Limiter returns a full bucket of b's shape.
func (b Bucket) Limiter() *rate.Limiter { return rate.NewLimiter(rate.Limit(b.Rate), b.Burst) }

// OrDefault fills a Rate or Burst of zero or less from d.
func (b Bucket) OrDefault(d Bucket) Bucket {
	if b.Rate <= 0 {
		b.Rate = d.Rate
	}
	if b.Burst <= 0 {
		b.Burst = d.Burst
	}
	return b
}

// Off says the Rate is zero or less: where that is not read as "the
// default", a bucket that limits nothing (the control API's --api-rate 0).
func (b Bucket) Off() bool { return b.Rate <= 0 }

// Full says l holds its whole burst at now: a bucket that limits nobody,
// safe to forget.
func Full(l *rate.Limiter, now time.Time) bool { return l.TokensAt(now) >= float64(l.Burst()) }
