// Package qwen is the Qwen Code leg: it makes the gateway a session of Qwen
// Code's cross-session protocol (docs/protocols/qwen-cross-session.md; what
// the real CLI and SDK did is in interop/FINDINGS-qwen.md). At its core are
// the session record in $QWEN_HOME/sessions and the reader's liveness rules,
// inbox socket paths, every NDJSON line on the wire (auth line, user frame,
// delivery_status receipt) with a strict parser, the sender-side receipt
// state machine and the send "mirror" of the receiver's limits, the inbox
// admission guard in Qwen Code's own order (misaddressed, global and
// per-sender buckets, duplicate window, settled ids, holds, queue),
// coalesced drop receipts, controller and child tokens, and one extension
// of ours: a "hopChain" on user frames, which Qwen Code ignores, so the
// bridge's loop guard sees a message's relays across this leg. These are
// functions of their inputs, an injected Clock and injected process facts,
// so they are tested and fuzzed without sockets. On top of them the Leg
// (peer.go) binds the inbox socket, writes the record and serves it,
// sends, lists the live sessions and publishes alias records. It follows the
// protocol page shipped in @qwen-code/qwen-code and, where that page and the
// shipped code disagree, the code (Qwen Code 0.24.4, @qwen-code/sdk 0.1.14);
// each such place says so. It imports leg, message, addressing, the shared
// socket plumbing in leg/uds and internal packages; never another leg, the
// router or testkit.
//
// Each concern the two local legs share has a file of the same name here and
// in leg/claude: policy.go (crossSessionInbound, review classes,
// hold causes), admission.go (the guard: misaddressed, buckets, duplicate
// window, settled ids, queue), hold.go (held messages, expiry, Decide,
// Reevaluate), send.go, receive.go, roster.go (listing live sessions),
// registry.go (the session record) and receipts.go (receipt dials and
// coalesced drop receipts). What only this protocol has keeps its own file:
// auth.go and token.go (the auth line and its tokens), controllers.go,
// frame.go, wire.go and line.go (the frames, their named values and the
// parser), json.go and text.go (JavaScript's JSON and string rules), hop.go
// (the hopChain extension), state.go (the sender's receipt ledger), mirror.go
// (the send-side mirror of the receiver's limits), clock.go (elapsed time as
// Qwen Code measures it), liveness.go, paths.go, alias.go.
package qwen
