package stream

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/sessiongateway/gateway/internal/clock"
)

// DefaultBackoff is the web app's reconnect delay
// (docs/protocols/claude-ai-remote.md#connection-lifecycle), spacing the
// attempts: 2^n seconds after n consecutive
// failures (1 s after a healthy connection dropped), at most 256 s (about
// four minutes), each plus up to a second at random, so that many
// sessions dropped together do not reconnect together.
var DefaultBackoff = clock.Backoff{Initial: time.Second, Max: 256 * time.Second, Spread: time.Second}

// reconnect is one Run's backoff between attempts. A healthy connection
// that dropped waits the policy's first wait and each consecutive failure
// the next; a stream that starts, or wakes from dormancy, had no healthy
// connection to lose, so its first failure already waits the second.
type reconnect struct{ b backoff.BackOff }

func newReconnect(p clock.Backoff, c clock.Clock) *reconnect {
	r := &reconnect{b: p.New(c)}
	r.fresh()
	return r
}

// fresh is the state of a stream starting or waking.
func (r *reconnect) fresh() {
	r.b.Reset()
	r.b.NextBackOff()
}

// healthy starts the waits over: a connection worked.
func (r *reconnect) healthy() { r.b.Reset() }

// next is the wait before the next attempt.
func (r *reconnect) next() time.Duration { return max(r.b.NextBackOff(), 0) }

// maxRetryAfter bounds what a server can make us wait, by Retry-After or
// the event stream's retry: field: beyond it the value is more likely
// garbage than advice.
const maxRetryAfter = time.Hour

// ParseRetryAfter reads a Retry-After value: delay-seconds or an HTTP-date
// (RFC 9110 §10.2.3), relative to now. It returns 0 for an absent, invalid
// or past value and caps the result at one hour.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if err != nil || n > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}
