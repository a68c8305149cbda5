// Package fakecloud is a loopback fake of claude.ai's Sessions API
// (docs/protocols/claude-ai-remote.md), for
// `gateway demo-cloud` (demo.go: people try the remote legs without an
// account) and for the tests of everything remote: the REST endpoints
// (sessions, events with after_id paging, share-status, environments) and
// the subscribe WebSocket, which speaks newline-delimited JSON with server
// keep-alives; and the v2 code-sessions surface the current Claude Code CLI
// uses instead (list, detail, events post, events list by from_sequence_num,
// ping, and the Server-Sent Events stream with per-session sequence numbers,
// resume and ping comments). It checks credentials (a bearer token, tokens
// its OAuth refresh endpoint issued, or the sessionKey cookie), the
// organisation and the required anthropic-* headers; keeps posts idempotent
// by event uuid; classifies posted events against a bound device key
// (attested, bound_unattested, or refused when the client_attestation does
// not verify); and logs every request with credentials redacted. A test
// scripts the server side: Emit pushes any message, StreamTurn a streamed
// turn, Prompt a can_use_tool prompt (answered only over HTTP POST, as
// claude.ai answers it) and CancelPrompt withdraws one; with Options.Echo a
// built-in worker answers posted user messages, raises prompts for "ask",
// "bash" and "plan", and honours interrupt, set_model and
// set_permission_mode (RefuseControls makes a subtype answered with an error
// instead; Options.Models and Commands fill initialize's answer;
// SuppressEcho keeps posted user messages off the stream, then streams them
// late). Failure scripts make the next requests answer 401, 403, 429 with
// Retry-After or 5xx, slow (Delay), or make a subscription or stream close,
// drop or stall. Time comes from an injectable Clock. Live (GET
// /fakecloud/live, the fake's own route) counts the open streams, for a
// harness in another process. It listens on loopback only. It reads and
// writes claude.ai's messages with a small codec of its own: it must not
// decode with the client under test (leg/remote/wire) or its stream, so that
// fake and client cannot agree on one mistake; its tests may, as a
// cross-check. The binary links it, so it imports only the Sessions API
// client (its canonical form, to check attestations), auth and internal
// packages, never testkit.
package fakecloud
