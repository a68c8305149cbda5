package stream

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxBackoffExp caps the exponent so a stream that retries for ever waits
// at most about four minutes between attempts.
const maxBackoffExp = 8

// DefaultBackoff is the web app's reconnect delay
// (docs/protocols/claude-ai-remote.md#connection-lifecycle): 2^attempt seconds plus up to
// one second of random jitter, so that many sessions dropped together do not
// reconnect together.
func DefaultBackoff(attempt int) time.Duration {
	attempt = min(max(attempt, 0), maxBackoffExp)
	return time.Duration(1<<attempt)*time.Second + rand.N(time.Second)
}

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
