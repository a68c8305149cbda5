// Package leg is the contract between the router and the legs: Leg, what
// every leg offers (list sessions, send, run), and the optional abilities a
// leg may add beside it (leg.go: holding messages, idle notices, aliases,
// permission prompts, control requests, lifecycle, an outbox, files, ...),
// which the router asks for by type assertion. Emitter (emitter.go) is the
// one road a leg's events take to the router's queue. The legs themselves
// live below: leg/claude, leg/qwen, leg/remote, leg/federation, leg/outbox,
// with leg/uds the local-socket plumbing the local legs share. It imports
// message and addressing only.
package leg
