// Package abuse holds attacks a hostile same-user process (or a leaked
// token) can make on a running gateway, each run against the real binary in
// its own sandbox with bounded counts and time, and each asserting the bound
// the gateway must keep: resident memory, delivered counts for a legitimate
// peer while junk is held, bytes on disk, worker processes, latencies. It
// holds tests only; nothing imports it.
package abuse
