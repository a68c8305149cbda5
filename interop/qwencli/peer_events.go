package qwencli

// The lines PeerEndpoint (testdata/peer.mjs) prints, and the values they
// carry: messages, receipts, sessions and send results.

import (
	"encoding/json"
	"errors"
	"fmt"
)

// InboundMessage is a message a session sent to the endpoint.
type InboundMessage struct {
	MsgID    string `json:"msgId"`
	Content  string `json:"content"`
	Priority string `json:"priority"`
	From     string `json:"from"`     // the sender's inbox path
	FromName string `json:"fromName"` // a claim
	FromMode string `json:"fromMode"` // a claim; "" when the sender asserted none
}

// Receipt is a delivery status for one of the endpoint's sends, as the SDK
// applied it (repeats and impossible transitions are filtered out by it).
type Receipt struct {
	MsgID      string `json:"msgId"`
	Address    string `json:"address"`
	Status     string `json:"status"`
	Previous   string `json:"previous"`
	Reason     string `json:"reason"` // for people; never compare it
	DropReason string `json:"dropReason"`
}

// PeerSession is a session the endpoint can send to.
type PeerSession struct {
	SessionID string `json:"sessionId"`
	Name      string `json:"name"`
	Ref       string `json:"ref"`
	Address   string `json:"address"` // the shortest address that selects it
	Cwd       string `json:"cwd"`
	PID       int    `json:"pid"`
	Kind      string `json:"kind"`
	StartedAt int64  `json:"startedAt"`
}

// SendOptions is one send. To is "name", "name [ref]", "[ref]" or a ref.
type SendOptions struct {
	To         string `json:"to"`
	Content    string `json:"content"`
	FromMode   string `json:"fromMode,omitempty"` // FromPrompting, FromBypass, or "" for none
	Priority   string `json:"priority,omitempty"` // "now" or "next"
	Controller bool   `json:"controller,omitempty"`
}

// SendResult is what PeerEndpoint.send resolved to. Kind is "sent",
// "self", "not-found", "ambiguous" or "failed".
type SendResult struct {
	Kind        string       `json:"kind"`
	MsgID       string       `json:"msgId"`
	Peer        *PeerSession `json:"peer"`
	Suggestions []string     `json:"suggestions"`
	Matches     []string     `json:"matches"`
	Code        string       `json:"code"`
	Reason      string       `json:"reason"`
}

// endpointEvent is one line peer.mjs printed.
type endpointEvent struct {
	Event string          `json:"event"`
	ID    int             `json:"id"`
	Error string          `json:"error"`
	Code  string          `json:"code"`
	Raw   json.RawMessage `json:"-"`
	// Result is a command's result, decoded by the command.
	Result json.RawMessage `json:"result"`
}

// ErrBadEvent is returned by parseEvent for a line that is not an event.
var ErrBadEvent = errors.New("qwencli: not an endpoint event")

// parseEvent decodes one line peer.mjs printed.
func parseEvent(line []byte) (endpointEvent, error) {
	var e endpointEvent
	if err := json.Unmarshal(line, &e); err != nil {
		return endpointEvent{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	if e.Event == "" {
		return endpointEvent{}, fmt.Errorf("%w: no event name", ErrBadEvent)
	}
	e.Raw = append(json.RawMessage(nil), line...)
	return e, nil
}
