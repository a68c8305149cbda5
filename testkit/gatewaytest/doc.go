// Package gatewaytest is the one harness tests use to run a gateway: a
// sandbox World (its own Claude config, runtime, Qwen home and state
// directories, and the environment naming them), the gateway binary built
// once per test process and started in a World with arguments, an
// api.Client on its control socket, the CLI verbs run against it, and a
// watcher of its event stream. A test in package main that needs serve's
// internals starts serve itself and Attaches it to a World. It is imported
// only by tests; it must not import package main or the interop drivers.
package gatewaytest
