package jsonx

import (
	"errors"
	"fmt"
)

// MaxDepth is the deepest nesting of arrays and objects CheckUniqueKeys
// accepts, the control API's cap too. The deepest frame a genuine peer
// writes on a session socket is 3 (a Claude Code user frame's
// file_attachments entries), the deepest remote API object 7; without a cap
// a 1 MiB line of '[' cost about 58 MB of heap to refuse.
const MaxDepth = 64

// ErrTooDeep is wrapped, beside the caller's syntax error, by
// CheckUniqueKeys for text nested deeper than MaxDepth.
var ErrTooDeep = errors.New("JSON nested too deep")

// WithinDepth reports whether the arrays and objects of the JSON text b
// nest no deeper than limit. It only counts brackets outside strings, in
// one pass and without allocating, so it is cheap enough to run on any
// bytes before a parser sees them; it validates nothing else.
func WithinDepth(b []byte, limit int) bool {
	depth := 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return false
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return true
}

// checkDepth is CheckUniqueKeys' first step: refuse text nested deeper than
// MaxDepth before the decoder allocates for it.
func checkDepth(b []byte, syntaxErr error) error {
	if !WithinDepth(b, MaxDepth) {
		return fmt.Errorf("%w: %w (more than %d levels)", syntaxErr, ErrTooDeep, MaxDepth)
	}
	return nil
}
