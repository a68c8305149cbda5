package message

import "fmt"

// DropReason says why an inbound message was turned away. The first five
// are an inbox's admission checks, given before any policy ran (a dropped
// receipt's drop reason on both local protocols, and the bridge's hop
// guard's); the rest are the gateway's own, in drop events and its receipts,
// never on a peer's wire: a person denied it, its hold expired, the inbound
// policy refused it, the leg refused an unauthenticated sender, or the
// bridge could not give the sender (or a session) an alias, or the remote
// leg answered a session's control request it does not serve with an error. The wire
// spellings are in dropWire, the one table; the JSON the API and the CLI
// print carries them.
type DropReason uint8

const (
	DropDuplicate       DropReason = iota + 1 // the sender's last body again, inside the window
	DropRateLimited                           // over the sender's (or a shared) bucket
	DropHopLoop                               // the message has passed through the same relay too often
	DropHopRunaway                            // the hop chain is too long
	DropQueueFull                             // the delivery queue (or hold allowance) is full
	DropDenied                                // a person denied the hold
	DropExpired                               // the hold was not decided in time
	DropRefused                               // the inbound policy refuses every message
	DropUnauthenticated                       // the leg requires an auth line and got none
	DropAliasLimit                            // the bridge runs as many alias workers as it may
	DropUnserved                              // a remote session's control request of a subtype the gateway does not serve, answered with an error
	DropDisconnected                          // the receiver (an MCP client) left before reading it
	DropNotApprover                           // a reply to a permission prompt claiming the approver, from a process that is not the approver's
	DropRecordLimit                           // registry record files beyond what one listing reads (a leg's roster, not a message)
	DropShutdown                              // accepted as the gateway stopped, and not handled before it did
	DropUnsolicited                           // an answer (an idle notice) to a request the gateway never made, or already answered
)

var dropWire = [...]string{
	DropDuplicate: "duplicate", DropRateLimited: "rate-limited",
	DropHopLoop: "hop-loop", DropHopRunaway: "hop-runaway", DropQueueFull: "queue-full",
	DropDenied: "denied", DropExpired: "expired", DropRefused: "refused",
	DropUnauthenticated: "unauthenticated", DropAliasLimit: "alias-limit", DropUnserved: "unserved",
	DropDisconnected: "disconnected",
	DropNotApprover:  "not-approver", DropRecordLimit: "record-limit", DropShutdown: "shutdown",
	DropUnsolicited: "unsolicited",
}

// Admission reports whether r is one of the admission checks' reasons
// (DropDuplicate to DropQueueFull), the only ones a dropped receipt carries.
func (r DropReason) Admission() bool { return r >= DropDuplicate && r <= DropQueueFull }

// String returns the wire spelling.
func (r DropReason) String() string {
	if r > 0 && int(r) < len(dropWire) {
		return dropWire[r]
	}
	return fmt.Sprintf("drop(%d)", uint8(r))
}

// ParseDropReason reads a wire spelling.
func ParseDropReason(s string) (DropReason, error) {
	for i, w := range dropWire {
		if w != "" && w == s {
			return DropReason(i), nil
		}
	}
	return 0, fmt.Errorf("unknown drop reason %q", s)
}

// MarshalText writes the wire spelling. The zero reason has none.
func (r DropReason) MarshalText() ([]byte, error) {
	if r == 0 || int(r) >= len(dropWire) {
		return nil, fmt.Errorf("invalid drop reason %d", uint8(r))
	}
	return []byte(dropWire[r]), nil
}

// UnmarshalText reads the wire spelling.
func (r *DropReason) UnmarshalText(b []byte) error {
	v, err := ParseDropReason(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// LinkState is where a remote session's live stream stands. Its wire
// spellings are in linkWire, the one table.
type LinkState uint8

const (
	LinkConnected    LinkState = iota + 1 // open and reading
	LinkReconnecting                      // lost or failed; waiting before the next attempt
	LinkDormant                           // closed after an idle spell; waiting for a wake or new events
	LinkGaveUp                            // the stream stopped for good
)

var linkWire = [...]string{
	LinkConnected: "connected", LinkReconnecting: "reconnecting", LinkDormant: "dormant", LinkGaveUp: "gave_up",
}

// String returns the wire spelling.
func (s LinkState) String() string {
	if s > 0 && int(s) < len(linkWire) {
		return linkWire[s]
	}
	return fmt.Sprintf("LinkState(%d)", uint8(s))
}

// ParseLinkState reads a wire spelling.
func ParseLinkState(s string) (LinkState, error) {
	for i, w := range linkWire {
		if w != "" && w == s {
			return LinkState(i), nil
		}
	}
	return 0, fmt.Errorf("unknown link state %q", s)
}

// MarshalText writes the wire spelling. The zero state has none.
func (s LinkState) MarshalText() ([]byte, error) {
	if s == 0 || int(s) >= len(linkWire) {
		return nil, fmt.Errorf("invalid link state %d", uint8(s))
	}
	return []byte(linkWire[s]), nil
}

// UnmarshalText reads the wire spelling.
func (s *LinkState) UnmarshalText(b []byte) error {
	v, err := ParseLinkState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
