// Package clock holds FakeClock, a clock that moves only when a test says, so
// rate limits, hold expiry and batching windows run in microseconds. It fits
// the Clock interfaces of the legs, which spell Stopper as an alias.
package clock
