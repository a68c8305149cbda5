package sessionsapi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"github.com/sessiongateway/gateway/internal/bounded"
)

// MaxDepth is the deepest nesting of objects and arrays Canonicalize accepts.
// Event payloads are shallow; the cap keeps a hostile payload from costing
// stack or time long before the library's own, much larger, limit.
const MaxDepth = 64

// Errors Canonicalize returns, to be matched with errors.Is. Every error from
// our own checks is an *Error carrying the byte offset; errors from the
// library are wrapped together with ErrInvalidJSON.
var (
	ErrInvalidUTF8   = errors.New("invalid UTF-8")
	ErrBadSurrogate  = errors.New("lone or reversed UTF-16 surrogate in \\u escape")
	ErrDuplicateKey  = errors.New("duplicate object name")
	ErrTooDeep       = fmt.Errorf("nesting deeper than %d", MaxDepth)
	ErrInvalidJSON   = errors.New("invalid JSON")
	errLibraryJudges = errors.New("left to the library") // internal: not JSON our checker follows
)

// Error is a rejection by our own checks, at a byte offset of the input.
type Error struct {
	Offset int    // byte offset in the input where the problem starts
	Err    error  // one of ErrInvalidUTF8, ErrBadSurrogate, ErrDuplicateKey, ErrTooDeep
	Detail string // the offending name or escape, shortened; never the payload
}

func (e *Error) Error() string {
	s := fmt.Sprintf("jcs: %v at byte %d", e.Err, e.Offset)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Canonicalize returns the RFC 8785 canonical form of the JSON text b: the
// bytes a signature covers. It rejects, before the library sees them, inputs
// RFC 8785 forbids that a lenient canonicaliser would turn into some output
// anyway (so that two implementations could sign different bytes).
func Canonicalize(b []byte) ([]byte, error) {
	if err := check(b); err != nil {
		return nil, err
	}
	out, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("jcs: %w: %w", ErrInvalidJSON, err)
	}
	return out, nil
}

// check runs our guards. It follows well-formed JSON only: on anything else
// it stops without error and lets the library report the syntax error, so
// that our checks only ever reject what the library would have accepted.
func check(b []byte) error {
	if !utf8.Valid(b) {
		i := 0
		for i < len(b) {
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return &Error{Offset: i, Err: ErrInvalidUTF8}
	}
	c := checker{b: b}
	if err := c.value(); err != nil && !errors.Is(err, errLibraryJudges) {
		return err
	}
	return nil
}

type checker struct {
	b     []byte
	i     int
	depth int
}

func (c *checker) fail(at int, err error, detail string) error {
	return &Error{Offset: at, Err: err, Detail: detail}
}

func (c *checker) ws() {
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

func (c *checker) value() error {
	c.ws()
	if c.i >= len(c.b) {
		return errLibraryJudges
	}
	switch c.b[c.i] {
	case '{':
		return c.object()
	case '[':
		return c.array()
	case '"':
		_, err := c.str(false)
		return err
	}
	// A number or literal: the library checks its spelling.
	for c.i < len(c.b) && !strings.ContainsRune(",]} \t\r\n", rune(c.b[c.i])) {
		c.i++
	}
	return nil
}

func (c *checker) enter() error {
	c.depth++
	if c.depth > MaxDepth {
		return c.fail(c.i, ErrTooDeep, "")
	}
	c.i++ // past '{' or '['
	return nil
}

func (c *checker) object() error {
	if err := c.enter(); err != nil {
		return err
	}
	seen := make(map[string]struct{})
	c.ws()
	if c.i < len(c.b) && c.b[c.i] == '}' {
		c.i++
		c.depth--
		return nil
	}
	for {
		c.ws()
		if c.i >= len(c.b) || c.b[c.i] != '"' {
			return errLibraryJudges
		}
		at := c.i
		// Names compare after unescaping: "a" and "\u0061" are one name.
		name, err := c.str(true)
		if err != nil {
			return err
		}
		if _, dup := seen[name]; dup {
			return c.fail(at, ErrDuplicateKey, shorten(name))
		}
		seen[name] = struct{}{}
		c.ws()
		if c.i >= len(c.b) || c.b[c.i] != ':' {
			return errLibraryJudges
		}
		c.i++
		if err := c.value(); err != nil {
			return err
		}
		c.ws()
		if c.i >= len(c.b) {
			return errLibraryJudges
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case '}':
			c.i++
			c.depth--
			return nil
		default:
			return errLibraryJudges
		}
	}
}

func (c *checker) array() error {
	if err := c.enter(); err != nil {
		return err
	}
	c.ws()
	if c.i < len(c.b) && c.b[c.i] == ']' {
		c.i++
		c.depth--
		return nil
	}
	for {
		if err := c.value(); err != nil {
			return err
		}
		c.ws()
		if c.i >= len(c.b) {
			return errLibraryJudges
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case ']':
			c.i++
			c.depth--
			return nil
		default:
			return errLibraryJudges
		}
	}
}

// str reads a string starting at its opening quote, checking every \u
// escape for surrogates; it builds the unescaped value only when keep is set.
func (c *checker) str(keep bool) (string, error) {
	var sb strings.Builder
	c.i++ // past the opening quote
	for c.i < len(c.b) {
		ch := c.b[c.i]
		switch {
		case ch == '"':
			c.i++
			return sb.String(), nil
		case ch != '\\':
			if keep {
				sb.WriteByte(ch)
			}
			c.i++
			continue
		}
		at := c.i
		if c.i+1 >= len(c.b) {
			return "", errLibraryJudges
		}
		esc := c.b[c.i+1]
		c.i += 2
		if esc != 'u' {
			i := strings.IndexByte(`"\/bfnrt`, esc)
			if i < 0 {
				return "", errLibraryJudges
			}
			if keep {
				sb.WriteByte("\"\\/\b\f\n\r\t"[i])
			}
			continue
		}
		r, ok := c.hex4()
		if !ok {
			return "", errLibraryJudges
		}
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return "", c.fail(at, ErrBadSurrogate, fmt.Sprintf(`\u%04x without a high surrogate before it`, r))
		case r >= 0xD800 && r <= 0xDBFF:
			if c.i+1 >= len(c.b) || c.b[c.i] != '\\' || c.b[c.i+1] != 'u' {
				return "", c.fail(at, ErrBadSurrogate, fmt.Sprintf(`\u%04x without a low surrogate after it`, r))
			}
			c.i += 2
			lo, ok := c.hex4()
			if !ok {
				return "", errLibraryJudges
			}
			if lo < 0xDC00 || lo > 0xDFFF {
				return "", c.fail(at, ErrBadSurrogate, fmt.Sprintf(`\u%04x followed by \u%04x`, r, lo))
			}
			r = utf16.DecodeRune(r, lo)
		}
		if keep {
			sb.WriteRune(r)
		}
	}
	return "", errLibraryJudges
}

func (c *checker) hex4() (rune, bool) {
	if c.i+4 > len(c.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(c.b[c.i:c.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	c.i += 4
	return rune(v), true
}

// shorten quotes a name for an error message without dumping a long payload.
func shorten(s string) string {
	return strconv.Quote(bounded.Clip(s, 64))
}
