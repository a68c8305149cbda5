package outbox

import "time"

// Stopper cancels a pending AfterFunc; an alias, so testkit/clock fits.
type Stopper = interface{ Stop() bool }

// Clock is the time source of retries, their backoff and the age limit.
// Tests inject testkit/clock.FakeClock.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Stopper
}

type realClock struct{}

func (realClock) Now() time.Time                              { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Stopper { return time.AfterFunc(d, f) }
