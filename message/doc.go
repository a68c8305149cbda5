// Package message holds the wire-neutral model every leg speaks: Message,
// Receipt and its state machine, Session and Event, review modes, drop
// reasons and link states, the hop chain's limits, held messages, control
// requests, the remote sessions' lifecycle, and permission prompts with
// what reads and shows them (rule.go: the Tool(content) rule grammar;
// summary.go: a prompt on one line); the errors of a send a leg did not
// take or of an ability a leg lacks (errors.go); the errors of answering a
// prompt (answer.go: settled, unknown, invalid, with the problem named); and
// the durable outbox's listing (outbox.go). It imports nothing of
// ours, so every leg and the router can depend on it.
package message
