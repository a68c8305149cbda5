// Package qwen is the pure-protocol core of the Qwen Code leg: the session
// record in $QWEN_HOME/sessions and the reader's liveness rules, inbox socket
// paths, every NDJSON line on the wire (auth line, user frame, delivery_status
// receipt) with a strict parser, the sender-side receipt state machine and the
// send "mirror" of the receiver's limits, the inbox admission guard in Qwen
// Code's own order (auth, misaddressed, global and per-sender buckets,
// duplicate window, settled ids, holds, queue), coalesced drop receipts,
// controller and child tokens, and one extension of ours: a "hopChain" on
// user frames, which Qwen Code ignores, so the bridge's loop guard sees a
// message's relays across this leg. It follows the protocol page shipped in
// @qwen-code/qwen-code and, where that page and the shipped code disagree, the
// code (Qwen Code 0.24.4, @qwen-code/sdk 0.1.14); each such place says so.
// Everything here is a function of its inputs, an injected Clock and injected
// process facts, so it is tested and fuzzed without sockets; the Leg that
// serves a socket is built on top of it. It imports message and the shared
// uds plumbing, never another transport, the router or testkit.
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
// (the send-side mirror of the receiver's limits), liveness.go, paths.go,
// alias.go.
package qwen
