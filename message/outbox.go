package message

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// ErrOutboxFull marks a send refused because the durable outbox is at its
// cap (messages or bytes waiting for a server): the API answers 507, and
// the same send may work once some are acknowledged.
var ErrOutboxFull = errors.New("outbox full")

// OutboxItem is one message in a durable outbox as `gateway outbox` and
// GET /v1/outbox show it: accepted for a remote session, kept until its
// server acknowledges it.
type OutboxItem struct {
	ID            string        `json:"id"`
	To            string        `json:"to"`
	ToName        string        `json:"to_name,omitempty"`
	Leg           Protocol      `json:"leg"`
	Preview       string        `json:"body_preview"`
	State         OutboxState   `json:"state"`
	Attempts      int           `json:"attempts"`
	LastError     string        `json:"last_error,omitempty"`
	Failure       OutboxFailure `json:"failure,omitempty"`
	AcceptedAt    time.Time     `json:"accepted_at"`
	NextAttemptAt time.Time     `json:"next_attempt_at,omitzero"`
	FinishedAt    time.Time     `json:"finished_at,omitzero"`
	EventUUID     string        `json:"event_uuid,omitempty"`
}

// previewRunes bounds OutboxItem.Preview.
const previewRunes = 80

// Preview is the start of body on one line, for a table.
func Preview(body string) string {
	var b strings.Builder
	n := 0
	for _, r := range body {
		if n == previewRunes {
			b.WriteString("…")
			break
		}
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// OutboxState is where an outbox entry stands.
type OutboxState uint8

const (
	OutboxPending OutboxState = iota + 1 // stored, not yet acknowledged by the server
	OutboxAcked                          // the inner leg said sent (or better)
	OutboxFailed                         // refused for good, or not acknowledged in time
)

var outboxStateWire = [...]string{OutboxPending: "pending", OutboxAcked: "acked", OutboxFailed: "failed"}

func (s OutboxState) String() string {
	if int(s) < len(outboxStateWire) && outboxStateWire[s] != "" {
		return outboxStateWire[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// ParseOutboxState reads the wire spelling.
func ParseOutboxState(s string) (OutboxState, error) {
	for i, w := range outboxStateWire {
		if w != "" && w == s {
			return OutboxState(i), nil
		}
	}
	return 0, fmt.Errorf("unknown outbox state %q (want pending, acked or failed)", s)
}

// MarshalText writes the wire spelling.
func (s OutboxState) MarshalText() ([]byte, error) {
	if int(s) >= len(outboxStateWire) || outboxStateWire[s] == "" {
		return nil, fmt.Errorf("outbox: cannot write %v", s)
	}
	return []byte(outboxStateWire[s]), nil
}

// UnmarshalText reads the wire spelling.
func (s *OutboxState) UnmarshalText(b []byte) error {
	v, err := ParseOutboxState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Final reports whether the entry will not be sent again.
func (s OutboxState) Final() bool { return s == OutboxAcked || s == OutboxFailed }

// OutboxFailure says why an outbox entry ended failed.
type OutboxFailure uint8

const (
	OutboxRefused OutboxFailure = iota + 1 // the inner leg refused it for good, MaxRefusals times
	OutboxExpired                          // not acknowledged within MaxAge
	OutboxGone                             // the stored entry could not be read back
)

var outboxFailureWire = [...]string{OutboxRefused: "refused", OutboxExpired: "expired", OutboxGone: "unreadable"}

func (r OutboxFailure) String() string {
	if int(r) < len(outboxFailureWire) && outboxFailureWire[r] != "" {
		return outboxFailureWire[r]
	}
	return fmt.Sprintf("fail-reason(%d)", uint8(r))
}

// MarshalText writes the wire spelling.
func (r OutboxFailure) MarshalText() ([]byte, error) {
	if int(r) >= len(outboxFailureWire) || outboxFailureWire[r] == "" {
		return nil, fmt.Errorf("outbox: cannot write %v", r)
	}
	return []byte(outboxFailureWire[r]), nil
}

// UnmarshalText reads the wire spelling.
func (r *OutboxFailure) UnmarshalText(b []byte) error {
	for i, w := range outboxFailureWire {
		if w != "" && w == string(b) {
			*r = OutboxFailure(i)
			return nil
		}
	}
	return fmt.Errorf("unknown outbox failure %q", b)
}
