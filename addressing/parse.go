package addressing

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits. The uds: cap is Claude Code's from= cap; the rest bound the work a
// hostile input can cause.
const (
	maxAddress  = 2048 // any address, in bytes; long did:key ids fit
	maxUDS      = 300  // "uds:" + path, in bytes
	maxPipe     = 256  // \\.\pipe\NAME, the Windows limit
	maxBridgeID = 128
	maxName     = 80 // characters (runes)
)

const (
	namePrefix = "name:" // forces a bare string to be read as a name
	pipePrefix = `\\.\pipe\`
)

// reservedPrefixes cannot start a name, so a name never reads as another form.
var reservedPrefixes = [...]string{"uds:", "bridge:", "did:", namePrefix, "/", `\`}

// ParseReason says why Parse rejected an input.
type ParseReason uint8

const (
	ReasonEmpty ParseReason = iota + 1
	ReasonTooLong
	ReasonPathNotAbsolute
	ReasonPathNUL
	ReasonPathNotClean
	ReasonBarePath
	ReasonPipeName
	ReasonBridgeID
	ReasonDIDMethod
	ReasonDIDID
	ReasonRef
	ReasonNameLength
	ReasonNameEncoding
	ReasonNameChar
	ReasonNameSpace
	ReasonNamePrefix
	ReasonPathEncoding
)

// parseReasons holds each reason's wire spelling and the sentence a user reads.
var parseReasons = [...]struct{ wire, text string }{
	ReasonEmpty:           {"empty", "it is empty; give a session name, name [ref], [ref], uds:/path, bridge:ID or did:METHOD:ID"},
	ReasonTooLong:         {"too-long", "it is too long (uds: addresses are at most 300 bytes, pipes 256, anything 2048)"},
	ReasonPathNotAbsolute: {"path-not-absolute", "a socket path must be absolute, starting with /"},
	ReasonPathNUL:         {"path-nul", "a socket path cannot contain a NUL byte"},
	ReasonPathNotClean:    {"path-not-clean", "a socket path must be clean: no //, /./, /../ or trailing /"},
	ReasonBarePath:        {"bare-path", "a bare path must end in .sock; write uds:PATH for other sockets"},
	ReasonPipeName:        {"pipe-name", `a pipe is \\.\pipe\NAME with a NAME of printable characters other than \ and /`},
	ReasonBridgeID:        {"bridge-id", "a bridge id is 1 to 128 of A-Z a-z 0-9 _ -"},
	ReasonDIDMethod:       {"did-method", "a did is did:METHOD:ID with a METHOD of lowercase letters and digits"},
	ReasonDIDID:           {"did-id", "a did ID is letters, digits, . - _ and %XX escapes, joined by : and not ending in :"},
	ReasonRef:             {"ref", "a ref is exactly 6 lowercase hex digits, as in [3f2a1c]"},
	ReasonNameLength:      {"name-length", "a name is 1 to 80 characters"},
	ReasonNameEncoding:    {"name-encoding", "a name must be valid UTF-8"},
	ReasonNameChar:        {"name-char", `a name cannot contain control characters or " < > [ ]`},
	ReasonNameSpace:       {"name-space", "a name cannot start or end with a space"},
	ReasonNamePrefix:      {"name-prefix", `a name cannot start with uds:, bridge:, did:, name:, / or \`},
	ReasonPathEncoding:    {"path-encoding", "a socket path must be valid UTF-8"},
}

// String is the reason's wire spelling, for logs and API error codes.
func (r ParseReason) String() string {
	if r == 0 || int(r) >= len(parseReasons) {
		return fmt.Sprintf("ParseReason(%d)", uint8(r))
	}
	return parseReasons[r].wire
}

func (r ParseReason) text() string {
	if r == 0 || int(r) >= len(parseReasons) {
		return "it is invalid"
	}
	return parseReasons[r].text
}

// ParseError is an input Parse rejected, and why.
type ParseError struct {
	Input  string
	Reason ParseReason
}

func (e *ParseError) Error() string {
	in := e.Input
	if len(in) > 64 {
		in = in[:64] + "..." // the input may be a hostile peer's; keep logs short
	}
	return fmt.Sprintf("invalid address %q: %s", in, e.Reason.text())
}

// Parse reads an address, ignoring surrounding white space. Forms, tried in
// this order:
//
//	uds:/abs/path          KindUDS; %XX escapes are decoded (see UnescapePath)
//	bridge:ID              KindBridge
//	did:METHOD:ID          KindDID (W3C DID core syntax)
//	\\.\pipe\NAME          KindPipe; //./pipe/NAME is read the same way
//	/abs/path.sock         KindUDS; other bare paths are rejected
//	[3f2a1c]               KindRef
//	NAME [3f2a1c]          KindName pinned to a ref
//	3f2a1c                 KindRef: six lowercase hex digits are a ref, not a name
//	name:NAME              KindName, forced: reach a session named "3f2a1c"
//	NAME                   KindName
//
// A name is 1 to 80 characters of valid UTF-8, without control characters or
// " < > [ ], without leading or trailing space, and not starting with uds:,
// bridge:, did:, name:, / or \. Schemes are lowercase.
func Parse(s string) (Address, error) {
	in := s
	s = strings.TrimSpace(s)
	fail := func(r ParseReason) (Address, error) { return Address{}, &ParseError{Input: in, Reason: r} }
	if s == "" {
		return fail(ReasonEmpty)
	}
	if len(s) > maxAddress {
		return fail(ReasonTooLong)
	}
	if p, ok := SocketOf(s); ok {
		if r := checkPath(p); r != 0 {
			return fail(r)
		}
		return Address{Kind: KindUDS, Path: p}, nil
	}
	if id, ok := strings.CutPrefix(s, "bridge:"); ok {
		if !isBridgeID(id) {
			return fail(ReasonBridgeID)
		}
		return Address{Kind: KindBridge, ID: id}, nil
	}
	if rest, ok := strings.CutPrefix(s, "did:"); ok {
		method, id, _ := strings.Cut(rest, ":")
		if !isDIDMethod(method) {
			return fail(ReasonDIDMethod)
		}
		if !isDIDID(id) {
			return fail(ReasonDIDID)
		}
		return Address{Kind: KindDID, Method: method, ID: id}, nil
	}
	if name, ok := cutPipePrefix(s); ok {
		if !isPipeName(name) {
			return fail(ReasonPipeName)
		}
		return Address{Kind: KindPipe, Path: pipePrefix + name}, nil
	}
	if strings.HasPrefix(s, "/") {
		if !strings.HasSuffix(s, ".sock") {
			return fail(ReasonBarePath)
		}
		if r := checkPath(s); r != 0 {
			return fail(r)
		}
		return Address{Kind: KindUDS, Path: s}, nil
	}
	a, r := parseNameRef(s)
	if r != 0 {
		return fail(r)
	}
	return a, nil
}

// parseNameRef reads the name and ref forms.
func parseNameRef(s string) (Address, ParseReason) {
	s, forced := strings.CutPrefix(s, namePrefix)
	if strings.HasSuffix(s, "]") {
		if i := strings.LastIndexByte(s, '['); i >= 0 {
			ref := s[i+1 : len(s)-1]
			if !isRef(ref) {
				return Address{}, ReasonRef
			}
			name := strings.TrimRightFunc(s[:i], unicode.IsSpace)
			if name == "" && !forced {
				return Address{Kind: KindRef, Ref: ref}, 0
			}
			if r := checkName(name); r != 0 {
				return Address{}, r
			}
			return Address{Kind: KindName, Name: name, Ref: ref}, 0
		}
	}
	if !forced && isRef(s) {
		return Address{Kind: KindRef, Ref: s}, 0
	}
	if r := checkName(s); r != 0 {
		return Address{}, r
	}
	return Address{Kind: KindName, Name: s}, 0
}

func checkPath(p string) ParseReason {
	switch {
	case !utf8.ValidString(p):
		return ReasonPathEncoding
	case len(UDS(p)) > maxUDS:
		return ReasonTooLong
	case !strings.HasPrefix(p, "/"):
		return ReasonPathNotAbsolute
	case strings.IndexByte(p, 0) >= 0:
		return ReasonPathNUL
	case path.Clean(p) != p:
		return ReasonPathNotClean
	}
	return 0
}

// checkName says why n is not a valid name, or 0.
func checkName(n string) ParseReason {
	if n == "" {
		return ReasonNameLength
	}
	if !utf8.ValidString(n) {
		return ReasonNameEncoding
	}
	if utf8.RuneCountInString(n) > maxName {
		return ReasonNameLength
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(n, p) {
			return ReasonNamePrefix
		}
	}
	first, _ := utf8.DecodeRuneInString(n)
	last, _ := utf8.DecodeLastRuneInString(n)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return ReasonNameSpace // Parse trims it, so it could never round-trip
	}
	for _, r := range n {
		// Bidi controls would let a name display as another name.
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || strings.ContainsRune(`"<>[]`, r) {
			return ReasonNameChar
		}
	}
	return 0
}

// cutPipePrefix accepts \\.\pipe\ with either slash in each place, as Windows
// does, and "pipe" in any case.
func cutPipePrefix(s string) (string, bool) {
	const n = len(pipePrefix)
	if len(s) < n {
		return "", false
	}
	slash := func(b byte) bool { return b == '\\' || b == '/' }
	if !slash(s[0]) || !slash(s[1]) || s[2] != '.' || !slash(s[3]) || !strings.EqualFold(s[4:8], "pipe") || !slash(s[8]) {
		return "", false
	}
	return s[n:], true
}

func isPipeName(name string) bool {
	if name == "" || len(pipePrefix)+len(name) > maxPipe {
		return false
	}
	for _, r := range name {
		if r == '\\' || r == '/' || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func isBridgeID(id string) bool {
	if id == "" || len(id) > maxBridgeID {
		return false
	}
	for i := range len(id) {
		b := id[i]
		if !(isAlnum(b) || b == '_' || b == '-') {
			return false
		}
	}
	return true
}

// isDIDMethod: method-name = 1*method-char; method-char = %x61-7A / DIGIT.
func isDIDMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := range len(m) {
		if !('a' <= m[i] && m[i] <= 'z' || '0' <= m[i] && m[i] <= '9') {
			return false
		}
	}
	return true
}

// isDIDID: method-specific-id = *( *idchar ":" ) 1*idchar, where
// idchar = ALPHA / DIGIT / "." / "-" / "_" / pct-encoded.
func isDIDID(id string) bool {
	if id == "" || strings.HasSuffix(id, ":") {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch b := id[i]; {
		case isAlnum(b) || b == '.' || b == '-' || b == '_' || b == ':':
		case b == '%' && i+2 < len(id) && isHex(id[i+1]) && isHex(id[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

func isAlnum(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}
