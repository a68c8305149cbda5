// Package fakeclaude is an in-process fake of a Claude Code session's peer
// socket, for fast tests: it registers like the real CLI (socket, key file,
// registry entry under a live stand-in pid that the kernel reports as the
// socket's listener, see testkit/standin), applies the mode-parity hold,
// sends receipts, answers idle subscriptions, and sends messages of its own
// with the envelope the real CLI writes (from, from-name, from-mode: no
// from-session). Unlike the real CLI it does not verify that a reply address
// belongs to the connecting process: tests connect from their own process. It is built from our own protocol code, so it can only
// agree with us: the interop tests against the real CLI are the judges.
package fakeclaude
