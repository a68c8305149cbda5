// Package message holds the wire-neutral model every leg speaks: Message,
// Receipt and its state machine, Session and Event, and permission prompts
// with what reads and shows them (rule.go: the Tool(content) rule grammar;
// summary.go: a prompt on one line). It imports nothing of ours, so every
// transport and the router can depend on it.
package message
