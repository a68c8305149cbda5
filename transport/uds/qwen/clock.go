package qwen

import "time"

// Stopper cancels a pending AfterFunc. It is an alias, not a named type, so a
// clock written in another package (testkit/clock) satisfies Clock without
// importing this one; *time.Timer is a Stopper.
type Stopper = interface{ Stop() bool }

// Clock is the time source of everything here whose limits depend on time:
// the admission buckets, the duplicate window, hold expiry, drop-receipt
// batching and the send mirror.
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

// elapsed is how long ago then was, as Qwen Code measures hold ages and the
// duplicate window: the larger of the monotonic and the wall-clock
// difference. The monotonic clock stops across a suspend and the wall clock
// can step back; taking the larger lets a suspend count as elapsed time and
// makes a backward step harmless.
func elapsed(now, then time.Time) time.Duration {
	mono := now.Sub(then)
	wall := now.Round(0).Sub(then.Round(0))
	return max(mono, wall)
}
