// Package qwencli runs a real Qwen Code CLI (0.24.4) offline for interop
// tests, and a real @qwen-code/sdk (0.1.14) PeerEndpoint beside it. A session
// is the TUI under a private tmux server, with a scratch HOME, QWEN_HOME,
// XDG_RUNTIME_DIR and TMPDIR, a settings.json that selects the OpenAI auth
// type, and OPENAI_BASE_URL pointing at a loopback fake of the
// chat-completions API (see testkit/fakeopenai); Start waits for its record in
// $QWEN_HOME/sessions and its bound inbox socket. An endpoint is
// testdata/peer.mjs, our own small Node script around PeerEndpoint, driven by
// JSON lines. It holds the harness only, no tests of the gateway, and imports
// nothing of ours but interop/internal/proc.
package qwencli
