package claudebg

import (
	"strings"
	"unicode/utf8"
)

// stripTerminal is a background agent's PTY output as text to read (§6):
// escape sequences (CSI, OSC, DCS and their kin), control characters but
// newline and tab, C1 controls and invalid UTF-8 are removed. A cursor
// move to another row (CSI H, f, A, B, E, F, d) and a lone carriage
// return become a newline, so the rows of a repaint stay apart, and a
// move along the row (CSI C, G, `) a space: Claude Code's TUI writes only
// what changed, and skips the columns between words so. Without a screen
// to paint on this is an approximation, which is all a watcher needs.
// Trailing spaces and blank rows go.
func stripTerminal(s string) string {
	s = strings.ToValidUTF8(s, "")
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			i = skipEscape(s, i, &b)
			continue
		case c == '\r':
			if i+1 >= len(s) || s[i+1] != '\n' {
				b.WriteByte('\n')
			}
		case c == '\n' || c == '\t':
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r < 0x80 || r > 0x9f {
				b.WriteString(s[i : i+n])
			}
			i += n
			continue
		default:
			b.WriteByte(c)
		}
		i++
	}
	return tidy(b.String())
}

// skipEscape passes over the escape sequence at s[i] (an ESC) and returns
// the index after it; an unterminated one runs to the end of s.
func skipEscape(s string, i int, b *strings.Builder) int {
	i++
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[': // CSI: parameters, intermediates, one final byte
		i++
		from := i
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
			i++
		}
		if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
			switch params := s[from:i]; s[i] {
			case 'H', 'f', 'E', 'F', 'd', 'A', 'B':
				b.WriteByte('\n')
			case 'G', '`':
				if params == "" || params == "1" { // the first column: a carriage return
					b.WriteByte('\n')
				} else {
					b.WriteByte(' ')
				}
			case 'C':
				b.WriteByte(' ')
			}
			i++
		}
		return i
	case ']', 'P', 'X', '^', '_': // strings: to BEL (OSC) or ST
		for i++; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return i
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f { // intermediates
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e { // the final byte; anything else is text again
		i++
	}
	return i
}

// tidy drops trailing spaces and blank rows: a repaint moves the cursor
// down past rows it does not write, which would read as blank lines.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimRight(l, " \t"); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
