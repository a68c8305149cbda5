// Package fakeanthropic is a loopback fake of the Anthropic Messages API
// (POST /v1/messages, streamed as server-sent events or answered as one JSON
// object, and POST /v1/messages/count_tokens) for driving a real Claude Code
// process in tests. A Script decides each answer (text and tool_use blocks),
// and every request is recorded decoded, so a test can ask whether a peer
// message reached the session with Request.Contains. It imports nothing of
// ours but testkit/recorder and listens on 127.0.0.1 only.
package fakeanthropic
