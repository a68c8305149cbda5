package message

import (
	"fmt"
	"time"
)

// Status is where a sent message stands.
type Status uint8

const (
	StatusQueued       Status = iota + 1 // accepted by the gateway, not yet written
	StatusSent                           // written to the target; no receipt yet
	StatusHeld                           // the receiver holds it for a person
	StatusDelivered                      // in the receiver's conversation
	StatusDenied                         // a person denied the hold
	StatusExpired                        // the hold timed out
	StatusRefused                        // the receiver refuses inbound messages
	StatusDropped                        // turned away at admission (see DropReason)
	StatusMisaddressed                   // the target is not who we meant
	StatusFailed                         // could not be written at all
)

var statusWire = [...]string{
	StatusQueued: "queued", StatusSent: "sent", StatusHeld: "held",
	StatusDelivered: "delivered", StatusDenied: "denied", StatusExpired: "expired",
	StatusRefused: "refused", StatusDropped: "dropped", StatusMisaddressed: "misaddressed",
	StatusFailed: "failed",
}

func (s Status) String() string {
	if int(s) < len(statusWire) && statusWire[s] != "" {
		return statusWire[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// ParseStatus reads the wire spelling.
func ParseStatus(s string) (Status, error) {
	for i, w := range statusWire {
		if w != "" && w == s {
			return Status(i), nil
		}
	}
	return 0, fmt.Errorf("unknown status %q", s)
}

func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *Status) UnmarshalText(b []byte) error {
	v, err := ParseStatus(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Final reports whether a sender waiting on the message can stop: a
// delivered message is final for waiting, though Qwen Code may still report
// it expired or misaddressed later (see CanMove).
func (s Status) Final() bool {
	switch s {
	case StatusDelivered, StatusDenied, StatusExpired, StatusRefused,
		StatusDropped, StatusMisaddressed, StatusFailed:
		return true
	}
	return false
}

// next lists the transitions a receipt may make. Anything else (a repeat,
// a late held after delivered) is ignored rather than applied.
var next = map[Status][]Status{
	StatusQueued: {StatusSent, StatusFailed, StatusHeld, StatusDelivered, StatusDropped,
		StatusRefused, StatusMisaddressed, StatusExpired},
	StatusSent: {StatusHeld, StatusDelivered, StatusDropped, StatusRefused,
		StatusMisaddressed, StatusExpired, StatusDenied},
	StatusHeld: {StatusDelivered, StatusDenied, StatusExpired, StatusRefused, StatusMisaddressed},
	// Qwen Code can still expire a delivered message (the session exited
	// with it unread) or find it misaddressed.
	StatusDelivered: {StatusExpired, StatusMisaddressed},
}

// CanMove reports whether a message in from may move to to.
func CanMove(from, to Status) bool {
	for _, s := range next[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Receipt is one status report about a message.
type Receipt struct {
	MsgID      string     `json:"msg_id"`
	Status     Status     `json:"status"`
	Reason     string     `json:"reason,omitempty"`      // receiver's human text
	Detail     string     `json:"detail,omitempty"`      // status_detail, e.g. refused
	DropReason DropReason `json:"drop_reason,omitempty"` // with StatusDropped
	From       string     `json:"from,omitempty"`        // who sent the receipt
	Time       time.Time  `json:"time"`
}

// Tracker is the state of one outbound message: the receipts it got,
// applied through the state machine. It is not safe for concurrent use.
type Tracker struct {
	Status   Status    `json:"status"`
	Receipts []Receipt `json:"receipts"`
}

// NewTracker starts a message in StatusQueued.
func NewTracker() *Tracker { return &Tracker{Status: StatusQueued} }

// Apply moves the tracker by r and reports whether it moved. A receipt that
// the state machine does not allow is ignored and recorded nowhere.
func (t *Tracker) Apply(r Receipt) bool {
	if !CanMove(t.Status, r.Status) {
		return false
	}
	t.Status = r.Status
	t.Receipts = append(t.Receipts, r)
	return true
}
