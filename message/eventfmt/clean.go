package eventfmt

import (
	"strings"
	"unicode"
)

// Clean is a peer's text made safe to print on the operator's terminal, on
// one line: control characters (C0, DEL, C1 with ESC, so no escape
// sequence, bell or carriage return) and the bidi overrides that reorder
// what is shown are dropped, line breaks and tabs become spaces, runs of
// space one. A sender cannot forge a line (a receipt, a held entry) on the
// screen where releases are decided. --json prints the text exact.
func Clean(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t' || r == '\v' || r == '\f':
			return ' '
		case unicode.IsControl(r), r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}
