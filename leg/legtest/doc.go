// Package legtest holds what tests of legs share: Fake, one configurable
// in-memory leg the router's, the API's and the other packages' tests run
// instead of a leg of their own; PromptLeg, a remote leg whose one session
// raises the permission prompts a test hands it and records the answers and
// control requests it is asked to carry (the prompt fixture the router, API,
// CLI and approver tests share); and Run, the Leg contract's conformance
// suite that every leg (the fake included) runs from its own package's
// tests. It imports only leg, message, addressing and internal/...: the
// router's own tests import it, so it must never import the router.
package legtest
