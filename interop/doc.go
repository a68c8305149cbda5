// Package interop tests the gateway binary against the real Claude Code CLI
// (2.1.332) and Qwen Code CLI and SDK (0.24.4, @qwen-code/sdk 0.1.14), run
// offline against loopback fakes of the model APIs. The
// tests run only with GATEWAY_INTEROP=1 (scripts/test.sh and CI set it); then
// a missing CLI fails them rather than skipping, and with CI=true but without
// it they fail too (testutil.Interop). Gateways run through
// testkit/gatewaytest; the local legs' peer suites (testkit/peersuite) run
// here against the real CLIs. Subpackages claudecli and qwencli run the real
// CLIs.
package interop
