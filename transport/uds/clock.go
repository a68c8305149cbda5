package uds

import "time"

// Stopper cancels a pending AfterFunc. It is an alias, not a named type, so a
// clock written in another package (testkit/clock) satisfies Clock without
// importing this one; *time.Timer is a Stopper.
type Stopper = interface{ Stop() bool }

// Clock is the time source of everything in the local legs whose limits
// depend on time: rate buckets, duplicate windows, hold expiry, receipt
// batching. Tests inject testkit/clock.FakeClock.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Stopper
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc runs f in its own goroutine after d, as time.AfterFunc does.
func (RealClock) AfterFunc(d time.Duration, f func()) Stopper { return time.AfterFunc(d, f) }
