// Package claudecli runs a real Claude Code CLI (2.1.332) offline for interop
// tests: a scratch HOME pre-seeded so no dialog blocks it, a dummy API key,
// ANTHROPIC_BASE_URL pointing at a loopback fake of the Messages API (see
// testkit/fakeanthropic), and the CLI's own peer socket, key file and registry
// entry, which Start waits for. Sessions run headless in stream-json mode
// (claude -p --input-format stream-json --output-format stream-json
// --verbose), whose stdout events a test can wait on, or as the TUI under a
// private tmux server. It holds the harness only, no tests of the gateway,
// and imports nothing of ours but interop/internal/proc.
package claudecli
