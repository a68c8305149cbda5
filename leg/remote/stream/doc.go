// Package stream keeps one claude.ai remote session live: over the
// subscribe WebSocket of the claude.ai web app (through leg/remote/wsclient)
// or over the v2 event stream on /v1/code/sessions/{id}/events/stream (SSE);
// docs/protocols/claude-ai-remote.md#two-transports. A Stream opens
// the connection, sends keep-alives, watches for stalls and idleness on an
// injected clock, reconnects with backoff, asks for replay and fills gaps
// from History, and delivers each event once (de-duplicated by uuid or
// sequence number) in order.
//
// It decodes with leg/remote/wire and imports no leg and nothing of the
// router: what it delivers is wire messages, and the remote
// leg in leg/remote turns them into router events.
package stream
