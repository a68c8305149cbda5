package outbox

import "fmt"

// State is where an outbox entry stands.
type State uint8

const (
	StatePending State = iota + 1 // stored, not yet acknowledged by the server
	StateAcked                    // the inner leg said sent (or better)
	StateFailed                   // refused for good, or not acknowledged in time
)

var stateWire = [...]string{StatePending: "pending", StateAcked: "acked", StateFailed: "failed"}

func (s State) String() string {
	if int(s) < len(stateWire) && stateWire[s] != "" {
		return stateWire[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// ParseState reads the wire spelling.
func ParseState(s string) (State, error) {
	for i, w := range stateWire {
		if w != "" && w == s {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("unknown outbox state %q (want pending, acked or failed)", s)
}

// MarshalText writes the wire spelling.
func (s State) MarshalText() ([]byte, error) {
	if int(s) >= len(stateWire) || stateWire[s] == "" {
		return nil, fmt.Errorf("outbox: cannot write %v", s)
	}
	return []byte(stateWire[s]), nil
}

// UnmarshalText reads the wire spelling.
func (s *State) UnmarshalText(b []byte) error {
	v, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Final reports whether the entry will not be sent again.
func (s State) Final() bool { return s == StateAcked || s == StateFailed }
