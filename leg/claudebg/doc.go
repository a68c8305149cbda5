// Package claudebg is the leg of Claude Code's background agents (`claude
// --bg`, `claude agents`): it finds their daemon's control socket for a
// config dir, lists the daemon's jobs as sessions (protocol claude-bg,
// address claude-bg:<job id>, kind background), streams each live job's
// output (`subscribe`) as EventRemote events stripped of terminal escapes,
// types a message sent to one into it as its next prompt (`reply`, with
// the daemon's control key), and dispatches and stops agents. The wire is
// docs/protocols/claude-daemon.md (its § numbers are cited here); what the
// real daemon does is interop/FINDINGS-bg.md.
//
// The daemon is another process: every line from it is capped (1 MiB),
// every exchange has a deadline, and what does not decode is dropped and
// counted. No socket means no sessions; a daemon of another protocol
// version is a *ProtoError, never a guess. It imports leg, leg/uds, the
// model and internal packages only.
package claudebg
