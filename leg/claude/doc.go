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
//
// Each concern the two local legs share has a file of the same name here and
// in leg/qwen: policy.go (the inbound policy and mode parity),
// admission.go (the guard: hop checks, duplicate window, rate buckets,
// queue-full), hold.go (held messages, expiry, release and denial), send.go,
// receive.go, roster.go (listing live sessions), registry.go (the registry
// entry and the key file) and receipts.go (status receipts and coalesced drop
// reports). What only this protocol has keeps its own file: envelope.go,
// frame.go, hop.go, control.go (idle notices), attach.go, alias.go and
// bridge.go (alias workers for the sessions of other legs), paths.go.
package claude
