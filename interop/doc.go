// Package interop tests the gateway binary against the real Claude Code CLI
// (2.1.332), run offline against a loopback fake of the Messages API. The
// tests run only with GATEWAY_INTEROP=1 (scripts/test.sh and CI set it); then
// a missing CLI fails them rather than skipping, and with CI=true but without
// it they fail too (testutil.Interop). Gateways run through
// testkit/gatewaytest; the legs' conformance suites (testkit/legtest) run
// here against the real CLIs. Subpackages claudecli and qwencli run the real
// CLIs.
package interop
