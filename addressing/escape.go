package addressing

import (
	"strings"
	"unicode/utf8"
)

// Claude Code 2.1.332 prints a socket address as "uds:" + wv(path), where wv
// percent-encodes (as %XX, upper-case hex) every UTF-8 byte outside
// [A-Za-z0-9:_/.\-] (the backslash is kept, for pipe names), and reads one
// back with decodeURIComponent, keeping the text as it is when that fails.
// EscapePath and UnescapePath are those two functions, so a socket under a
// directory with a space in its name travels as %20 and comes back whole.

func pathSafeByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		b == ':' || b == '_' || b == '/' || b == '.' || b == '\\' || b == '-'
}

// EscapePath percent-encodes p as Claude Code's wv does.
func EscapePath(p string) string {
	n := 0
	for i := range len(p) {
		if !pathSafeByte(p[i]) {
			n++
		}
	}
	if n == 0 {
		return p
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(p) + 2*n)
	for i := range len(p) {
		c := p[i]
		if pathSafeByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}

// UnescapePath decodes every %XX in s, as decodeURIComponent does; when s
// holds a malformed escape, or the escapes decode to invalid UTF-8, it
// returns s unchanged, as Claude Code's fallback does.
func UnescapePath(s string) string {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b = append(b, c)
			continue
		}
		if i+2 >= len(s) {
			return s
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return s
		}
		b = append(b, hi<<4|lo)
		i += 2
	}
	if !utf8.Valid(b) {
		return s
	}
	return string(b)
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// UDS prints the uds: address of the socket at path, encoded for the wire.
func UDS(path string) string { return "uds:" + EscapePath(path) }

// SocketOf reads a uds: address back to its socket path (decoded); ok is
// false when addr is not a uds: address.
func SocketOf(addr string) (path string, ok bool) {
	p, ok := strings.CutPrefix(addr, "uds:")
	if !ok {
		return "", false
	}
	return UnescapePath(p), true
}
