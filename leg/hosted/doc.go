// Package hosted is the leg of sessions the gateway starts itself: the real
// Claude Code or Qwen Code CLI run headless in a directory of the user's,
// speaking stream-json on its stdin and stdout (docs/protocols/hosted.md;
// what the CLIs do is in interop/FINDINGS-hosted.md).
//
// Each session is one child process in its own process group, killed with
// the gateway. Its output is published like a remote session's (EventRemote
// events, the same codec: leg/remote/wire), its can_use_tool requests
// become pending prompts (source "hosted"), and a message sent to it by
// name is its next user turn. What a session is (agent, cwd, name, the
// CLI's session id) and the turns it was sent but had not yet taken are
// kept in <state-dir>/hosted.json, so a gateway restart resumes every
// session (--resume) and loses no accepted turn.
package hosted
