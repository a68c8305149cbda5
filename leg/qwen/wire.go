package qwen

import (
	"fmt"

	"github.com/sessiongateway/gateway/message"
)

// The named values of the wire (line types, receipt statuses, priorities,
// drop reasons) and their spellings, one table each.

// LineType is a line's "type". Its wire spelling is in lineTypeWire.
type LineType uint8

const (
	LineAuth    LineType = iota + 1 // the first line: a token
	LineUser                        // a message for the session
	LineControl                     // a receipt (action delivery_status)
)

var lineTypeWire = [...]string{LineAuth: "auth", LineUser: "user", LineControl: "control"}

// String returns the wire spelling.
func (t LineType) String() string { return wireName(lineTypeWire[:], int(t), "type") }

// ActionDeliveryStatus is the one control action in protocol version 1.
const ActionDeliveryStatus = "delivery_status"

// Status is a delivery_status receipt's "status". Its wire spelling is in
// statusWire.
type Status uint8

const (
	StatusHeld         Status = iota + 1 // parked for a person to review
	StatusDelivered                      // queued for the model
	StatusDenied                         // a person said no
	StatusRefused                        // the policy turns peer messages away
	StatusExpired                        // a hold ran out, or the session exited with it unread
	StatusMisaddressed                   // toSessionId names another session
	StatusDropped                        // turned away before any policy (see IsWireDrop)
)

var statusWire = [...]string{
	StatusHeld: "held", StatusDelivered: "delivered", StatusDenied: "denied",
	StatusRefused: "refused", StatusExpired: "expired", StatusMisaddressed: "misaddressed",
	StatusDropped: "dropped",
}

// String returns the wire spelling.
func (s Status) String() string { return wireName(statusWire[:], int(s), "status") }

// ParseStatus reads a wire status. A status this version does not know is
// an error: the caller treats it as "no transition" and keeps waiting.
func ParseStatus(s string) (Status, error) {
	if i := wireIndex(statusWire[:], s); i > 0 {
		return Status(i), nil
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownStatus, s)
}

// Priority is a user frame's "priority". Anything but "now" reads as next;
// today a receiver queues both for the next turn.
type Priority uint8

const (
	PriorityNext Priority = iota
	PriorityNow
)

var priorityWire = [...]string{PriorityNext: "next", PriorityNow: "now"}

// String returns the wire spelling.
func (p Priority) String() string { return wireName(priorityWire[:], int(p), "priority") }

// IsWireDrop reports whether r is one of the three reasons a Qwen Code
// inbox turns a message away for before any policy ran, the only ones a
// dropped receipt's "dropReason" carries: message.DropRateLimited (over the
// sender's or the global bucket), message.DropDuplicate (the sender's
// previous admitted body, within 30 s) and message.DropQueueFull (the hold
// buffer or the delivery queue is full). They are spelled as
// message.DropReason spells them.
func IsWireDrop(r message.DropReason) bool {
	return r == message.DropRateLimited || r == message.DropDuplicate || r == message.DropQueueFull
}

// ParseDropReason reads a wire dropReason: one of the three.
func ParseDropReason(s string) (message.DropReason, error) {
	if r, err := message.ParseDropReason(s); err == nil && IsWireDrop(r) {
		return r, nil
	}
	return 0, fmt.Errorf("unknown drop reason %q", s)
}

func wireName(table []string, i int, what string) string {
	if i > 0 && i < len(table) || i == 0 && table[0] != "" {
		return table[i]
	}
	return fmt.Sprintf("%s(%d)", what, i)
}

func wireIndex(table []string, s string) int {
	for i, w := range table {
		if w != "" && w == s {
			return i
		}
	}
	return -1
}

// wireMode is a user frame's fromMode: only bypass and prompting are
// claims; any other value asserts nothing.
func wireMode(s string) message.Mode {
	switch s {
	case "bypass":
		return message.ModeBypass
	case "prompting":
		return message.ModePrompting
	}
	return message.ModeUnknown
}
