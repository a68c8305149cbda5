package clock

import (
	"context"
	"time"
)

// Stopper cancels a pending AfterFunc; *time.Timer is one. It is an alias, not
// a named type, so a clock written elsewhere (testkit/clock) satisfies Clock
// without importing this package.
type Stopper = interface{ Stop() bool }

// Clock tells the time and runs a function later.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Stopper
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc runs f in its own goroutine after d, as time.AfterFunc does.
func (Real) AfterFunc(d time.Duration, f func()) Stopper { return time.AfterFunc(d, f) }

// Or returns c, or the wall clock when c is nil: the default every Config uses.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// After returns a channel closed d from now on c, and the Stopper that
// cancels it.
func After(c Clock, d time.Duration) (<-chan struct{}, Stopper) {
	fired := make(chan struct{})
	t := c.AfterFunc(d, func() { close(fired) })
	return fired, t
}

// Sleep waits d on c, or until ctx ends, returning ctx.Err() then.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	fired, t := After(c, d)
	defer t.Stop()
	select {
	case <-fired:
		return ctx.Err() // a caller that gave up while the timer fired still gave up
	case <-ctx.Done():
		return ctx.Err()
	}
}
