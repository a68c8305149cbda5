// Package uds is the socket and file plumbing shared by the local legs (Claude
// Code in leg/claude, Qwen Code in leg/qwen): a Unix socket listener with caps on
// line length, idle time and concurrent connections; peer credentials from the
// kernel; one-shot dialing and liveness probes, which can insist that the
// listener is the process a registry record names (holder.go); the check
// of a registry directory before each read; and the process identity (start
// ticks, boot id, pid namespace, machine id) that tells a live peer from a
// recycled pid. Its files (private directories, atomic writes, capped
// reads) are internal/safefile's. It speaks no protocol and imports nothing
// of ours but internal packages.
package uds
