// Package legtest holds each local leg's conformance suite: one set of
// checks per leg (RunClaude, RunQwen) run against any session that leg
// talks to, with the real gateway binary in between. Each leg's own package
// (leg/claude, leg/qwen) runs its suite against its fake
// (testkit/fakeclaude, testkit/fakeqwen); interop runs them against the real
// CLIs. A check that passes against a fake and fails against the
// real CLI shows where the fake, built from our own protocol code, has
// drifted from the peer. It is imported only by tests; it takes the refs
// the real CLIs derive from interop's drivers.
package legtest
