// Package fakeopenai is a loopback fake of the OpenAI chat-completions API
// (POST /v1/chat/completions, streamed as server-sent chunks ending in
// [DONE] or answered as one JSON object, and GET /v1/models) for driving a
// real Qwen Code process in tests. A Script decides each answer (text and
// tool calls, such as a send_message call to another session), and every
// request is recorded decoded, so a test can ask whether a peer message
// reached the session with Request.Contains. Requests to paths it does not
// serve are recorded and logged, so a test can see what a client asked for.
// It imports nothing of ours but testkit/recorder and listens on 127.0.0.1
// only.
package fakeopenai
