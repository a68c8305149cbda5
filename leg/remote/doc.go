// Package remote is the router's leg for claude.ai remote sessions. Leg
// follows the configured sessions (one stream.Stream each, after catching
// up with their history), translates what they say into router events
// (remote output, permission prompts, link state, answers back to the
// local senders of a turn) and posts messages, permission answers and
// control requests over REST through its API. A control request waits for
// the session's answer on the live stream; a control request of the
// session's that the gateway does not serve is refused at once; Info is
// what initialize answered. A message's attachments go in its user
// event's file_attachments. Create, Retitle, Archive and Environments are
// the sessions' lifecycle (an API with LifecycleAPI); a session the leg
// created is followed, its whole history streamed. NewSessionsAPI adapts the
// Sessions API client (leg/remote/sessionsapi) to that API on the v1 or v2
// paths, and IsRefusal names its errors that no retry will change.
//
// The codec lives in leg/remote/wire and the live connection in
// leg/remote/stream. This package imports those, sessionsapi (the
// REST client of the same service) and the shared message and addressing
// types; no other leg and nothing of the router. The wire is
// docs/protocols/claude-ai-remote.md.
package remote
