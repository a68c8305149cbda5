// Package standin starts a process that stands in for a session served in
// the test's own process: a live pid, with a start time, that a registry
// entry can name, and that the kernel records as the listener of the
// session's socket, as a real session's own process is. The socket stays
// served by the test (the stand-in only calls listen(2) on a descriptor of
// it, which makes the kernel's SO_PEERCRED for later connections name the
// stand-in). The stand-in is the test binary itself, re-run: importing this
// package installs the hook that makes it one. Only tests and fakes import
// it.
package standin
