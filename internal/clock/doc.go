// Package clock is the one time source every component takes: rate buckets,
// duplicate windows, hold expiry, keep-alives, retries and backoff. Tests pass
// testkit/clock.FakeClock and run minutes of protocol time in microseconds.
// It imports nothing of ours.
package clock
