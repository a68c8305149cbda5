// Package fakedaemon is a stand-in for Claude Code 2.1.332's background-agent
// daemon (`claude --bg`, `claude agents`): it listens on a control socket and
// speaks the daemon's control protocol, one newline-terminated JSON request
// per connection, one JSON answer (or, for subscribe, a stream of event
// frames), then the connection is closed. docs/protocols/claude-daemon.md
// describes the protocol; interop/FINDINGS-bg.md records where each frame
// was seen.
//
// Seen on the real daemon (interop/claudebg_test.go runs Conformance against
// both it and this stand-in):
//   - ping (no proto needed): {ok, op, version, proto, carriedPromptsFormat, signInPinFormat}
//   - the version rule: proto must be the integer 1, else EPROTO with
//     serverProto and serverVersion; bad JSON and a non-object are EUNKNOWN
//     "bad json"; an unknown op or a malformed field is EUNKNOWN "malformed
//     request: ..."; a request line over 1 MiB is ETOOLARGE
//   - list: {ok, op, jobs: [record...]}
//   - has: {ok, op, alive, present, ready}
//   - subscribe: a snapshot frame {type, record, streamTail}, then stream
//     {type, line}, state {type, patch} and, at the end, settled {type,
//     outcome}, after which the daemon closes the connection
//   - reply and dispatch need the control key as "auth" (EAUTH otherwise,
//     with different texts for a missing and a wrong key); reply answers
//     {ok, op}, dispatch {ok, op, short, pid, messagingSock, via}
//   - kill needs no key: {ok, op}; the job's subscribers get a state patch
//     with outcome "killed", then settled, and the job leaves list at once
//   - ENOJOB for an unknown short; the second line on one connection is ignored
//   - shutdown (no proto, no key): {ok, op, reaped}
//
// Read in the code only, not seen: the peer-uid check (EPEERUID), ESTALE for
// a dispatch whose short is still live under another nonce (the real daemon
// waits up to timeoutMs first; this one answers at once), and the record's
// "dying" flag. The daemon's terminal side (attach, resize, the pty and
// rendezvous sockets) and its file-based dispatch are not modelled.
package fakedaemon
