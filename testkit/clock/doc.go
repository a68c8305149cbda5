// Package clock holds FakeClock, a manual clock for tests of anything that
// takes a Clock (Now and AfterFunc). It imports nothing of ours: Stopper is an
// alias of the unnamed interface, so FakeClock satisfies every package's Clock
// interface that spells AfterFunc's result the same way.
package clock
