package message

import "fmt"

// Mode is the sender's permission review class, attested in from-mode.
// Claude Code accepts only bypass and prompting on the wire.
type Mode uint8

const (
	ModeUnknown Mode = iota // not attested
	ModeBypass
	ModePrompting
)

var modeWire = [...]string{ModeUnknown: "", ModeBypass: "bypass", ModePrompting: "prompting"}

func (m Mode) String() string {
	if int(m) < len(modeWire) {
		return modeWire[m]
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// ParseMode reads a wire mode; the empty string is ModeUnknown.
func ParseMode(s string) (Mode, error) {
	for i, w := range modeWire {
		if w == s {
			return Mode(i), nil
		}
	}
	return ModeUnknown, fmt.Errorf("unknown mode %q (want bypass or prompting)", s)
}

// MarshalText writes the wire spelling.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads the wire spelling.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
