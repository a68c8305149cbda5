// Package message holds the wire-neutral model every leg speaks: Message,
// Receipt and its state machine, Session and Event. It imports nothing of ours,
// so every transport and the router can depend on it.
package message
