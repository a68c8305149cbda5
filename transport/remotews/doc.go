// Package remotews is the live client for claude.ai remote sessions: the
// subscribe WebSocket of the claude.ai web app (seed 001) and the v2 event
// stream on /v1/code/sessions/{id}/events/stream (seed 000, INTEROP.md). This
// part is its wire layer: pure decoding of the NDJSON messages and content
// blocks both transports carry, and a WHATWG event-stream (SSE) reader, with
// no network, goroutines or clocks. Unknown message and block types are kept
// raw, never dropped, so a newer server degrades to "shown as JSON" rather
// than to silence. It imports only the standard library.
package remotews
