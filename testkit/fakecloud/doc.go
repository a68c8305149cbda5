// Package fakecloud is a loopback fake of claude.ai's Sessions API as seed 001
// describes it: the REST endpoints (sessions, events with after_id paging,
// share-status, environments) and the subscribe WebSocket, which speaks
// newline-delimited JSON; and the v2 code-sessions surface INTEROP.md says the
// current CLI uses instead (list, detail, events post and the Server-Sent
// Events stream with per-session sequence numbers, resume and ping comments).
// It checks credentials (bearer token or sessionKey cookie), the organisation
// and the required anthropic-* headers, lets a test script the server side
// (Emit pushes assistant, result, can_use_tool or control_cancel_request
// messages; Permissions lists pending prompts; Answers records permission
// answers, which are accepted only over HTTP POST as the seed says), and can
// be told to fail the next requests (401, 403, 429 with Retry-After, 5xx) or
// to drop or close a subscription or stream. It listens on 127.0.0.1 only and
// reuses the wire shapes of transport/remotews.
package fakecloud
