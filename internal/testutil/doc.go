// Package testutil holds the small helpers tests across the module share: a
// short temporary directory for Unix socket paths, a free loopback TCP port,
// a second process that listens on a Unix socket and counts the bytes of
// each connection, polling until a condition holds, a context that ends
// with the test, the latency summaries the benchmarks report, and Need and
// Interop, which skip a test that lacks a prerequisite on a developer's
// machine but fail it under scripts/test.sh and in CI. It is a
// normal package so that any package's tests may import it, but only tests
// import it; it imports nothing of the module.
package testutil
