package federation

import (
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/sessiongateway/gateway/internal/clock"
)

// doubling is the wait schedule of one retry loop: first, then twice the
// wait before, up to most. No jitter: each loop retries a request of its
// own, so there is no herd to spread. It never gives up by itself: the
// loop's context ends it, or an error it does not retry.
func doubling(clk clock.Clock, first, most time.Duration) *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(first), backoff.WithMaxInterval(most),
		backoff.WithMultiplier(2), backoff.WithRandomizationFactor(0),
		backoff.WithMaxElapsedTime(0), backoff.WithClockProvider(clk))
}
