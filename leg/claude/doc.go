// Package claude is the Claude Code leg: it makes the gateway a peer on Claude
// Code's local cross-session socket protocol, as Claude Code 2.1.332 speaks
// it (docs/protocols/claude-peer-socket.md; what the real CLI did is in
// interop/FINDINGS.md). It holds the registry entry and key file, the roster
// of live sessions, sending and receiving NDJSON frames on per-session Unix
// sockets, the <cross-session-message> envelope and its canonical round
// trip, receipts and idle notices, hop tokens, the inbox admission guard,
// attachments, and the alias workers that give other legs' sessions names
// here. The wire-level pieces (envelope, frame, guard, hop) are pure
// functions of their inputs and an injected Clock, so they are tested and
// fuzzed without sockets. It imports leg, message, addressing, the shared
// socket plumbing in leg/uds and internal packages; never another leg, the
// router or testkit.
//
// Each concern the two local legs share has a file of the same name here and
// in leg/qwen: policy.go (the inbound policy and mode parity),
// admission.go (the guard: hop checks, duplicate window, rate buckets,
// queue-full), hold.go (held messages, expiry, release and denial), send.go,
// receive.go, roster.go (listing live sessions), registry.go (the registry
// entry and the key file) and receipts.go (status receipts and coalesced drop
// reports). peer.go is the Peer itself (Register, Run), entries.go the
// capped read of the registry directory. What only this protocol has keeps
// its own file: envelope.go, frame.go, hop.go, control.go (idle notices and
// other control frames), attach.go (staging and checking attachments),
// uploads.go (the store of inbound attachments), alias.go, bridge.go and
// worker.go (alias workers for the sessions of other legs, and the worker
// process's control pipe), paths.go, and the return-address check:
// replyaddr_linux.go and unixdiag_linux.go (which process holds a reply
// socket, asked of the kernel), replyaddr_other.go elsewhere.
package claude
