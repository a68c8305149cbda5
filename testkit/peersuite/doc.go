// Package peersuite holds each local leg's end-to-end peer suite: one set
// of checks per leg (RunClaude, RunQwen) run against any session that leg
// talks to, with the real gateway binary in between. (The Leg contract's
// own conformance suite, run on a leg value in process, is leg/legtest.) Each leg's own package
// (leg/claude, leg/qwen) runs its suite against its fake
// (testkit/fakeclaude, testkit/fakeqwen); interop runs them against the real
// CLIs. A check that passes against a fake and fails against the
// real CLI shows where the fake, built from our own protocol code, has
// drifted from the peer. It is imported only by tests; it takes the refs
// the real CLIs derive from interop's drivers.
package peersuite
