// Package wire is the claude.ai remote-session event codec: the
// newline-delimited JSON messages of the subscribe WebSocket, the WHATWG
// event-stream framing (SSE) and the v2 event envelope with its sequence
// numbers, and the events a client posts back
// (user messages, permission answers, control requests); see
// docs/protocols/claude-ai-remote.md.
//
// The messages a busy session sends most are decoded in one pass by a
// streaming tokenizer (fast.go); anything it is not sure of is decoded
// again with encoding/json, the reference the two are fuzzed against.
//
// Unknown message and block types are kept raw, never dropped, so a newer
// server degrades to "shown as JSON" rather than to silence. It holds no
// connection and no state: it imports nothing of ours, and the stream and
// the leg in leg/remote build on it.
package wire
