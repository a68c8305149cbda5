// Package remotews is the live client for claude.ai remote sessions: the
// subscribe WebSocket of the claude.ai web app (seed 001) and the v2 event
// stream on /v1/code/sessions/{id}/events/stream (seed 000, INTEROP.md).
//
// Its wire layer decodes the NDJSON messages and content blocks both
// transports carry and reads WHATWG event streams (SSE). Unknown message and
// block types are kept raw, never dropped, so a newer server degrades to
// "shown as JSON" rather than to silence.
//
// Stream keeps one session connected over the subscribe WebSocket
// (github.com/coder/websocket) or the SSE stream, with keep-alive, stall and
// idle detection on an injected Clock, reconnects with backoff, replay and
// gap recovery through History, and de-duplication by uuid or sequence.
//
// Leg is the router's remote leg on top: it follows the configured
// sessions, turns what they say into events (output, permission prompts,
// link state), and posts messages, permission answers and control requests
// over REST through its API, which cmd/gateway adapts from
// transport/sessionsapi.
package remotews
