// Package router sits between the control API and the legs: it lists every
// reachable session, resolves an address to the leg that reaches it, sends,
// tracks each outbound message through its receipts, and fans events out to
// watchers. It knows legs only through the Leg interface and never imports a
// transport.
package router
