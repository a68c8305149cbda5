// Package eventfmt writes gateway events for people: one line per event
// (`gateway watch`), a send's status with its last receipt, and the
// streaming transcript of one remote session (`gateway remote watch`),
// where an assistant message grows in place. Where an event waits for an
// answer, its line names the gateway verb that gives it. It imports
// message only.
package eventfmt
