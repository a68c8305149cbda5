// Package claude is the Claude Code leg: it makes the gateway a peer on Claude
// Code's local cross-session socket protocol (as observed in Claude Code
// 2.1.332, see shared/INTEROP.md and seed 000). It holds the registry entry and
// key file, the roster of live sessions, sending and receiving NDJSON frames
// on per-session Unix sockets, the <cross-session-message> envelope and its
// canonical round trip, receipts and idle notices, hop tokens, and the inbox
// admission guard. The wire-level pieces (envelope, frame, guard, hop) are pure
// functions of their inputs and an injected Clock, so they are tested and
// fuzzed without sockets. It imports message, addressing and the shared uds plumbing,
// never another transport, the router or testkit.
package claude
