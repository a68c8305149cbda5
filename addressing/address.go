package addressing

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strconv"
)

// Kind says which form an address takes.
type Kind uint8

const (
	KindUDS    Kind = iota + 1 // a Unix socket: uds:/run/user/1000/cc-socks/4242.sock
	KindPipe                   // a Windows named pipe: \\.\pipe\NAME
	KindBridge                 // a claude.ai bridge session: bridge:ID
	KindDID                    // a decentralised identifier, resolved by a DIDResolver
	KindName                   // a session name, optionally pinned by a ref
	KindRef                    // a session ref alone: [3f2a1c]
)

var kindWire = [...]string{
	KindUDS: "uds", KindPipe: "pipe", KindBridge: "bridge",
	KindDID: "did", KindName: "name", KindRef: "ref",
}

func (k Kind) String() string {
	if k == 0 || int(k) >= len(kindWire) {
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindWire[k]
}

// Address is one parsed address. Only the fields of its Kind are set, so two
// addresses that print the same compare equal with ==.
type Address struct {
	Kind   Kind
	Path   string // KindUDS: absolute, clean socket path; KindPipe: \\.\pipe\NAME
	ID     string // KindBridge: bridge session id; KindDID: method-specific id
	Method string // KindDID: method name
	Name   string // KindName
	Ref    string // KindRef, and optionally KindName: 6 lowercase hex digits
}

// Errors from Dialable.
var (
	// ErrUnsupported also matches errors.ErrUnsupported.
	ErrUnsupported = fmt.Errorf("windows named pipes can only be dialed on windows: %w", errors.ErrUnsupported)
	ErrNotDialable = errors.New("a name, ref or did is not dialable; resolve it against the session roster first")
)

// String prints the canonical form, which Parse reads back to the same
// Address. The zero Address prints as "".
func (a Address) String() string {
	switch a.Kind {
	case KindUDS:
		return UDS(a.Path)
	case KindPipe:
		return a.Path
	case KindBridge:
		return "bridge:" + a.ID
	case KindDID:
		return "did:" + a.Method + ":" + a.ID
	case KindRef:
		return "[" + a.Ref + "]"
	case KindName:
		if a.Ref != "" {
			return a.Name + " [" + a.Ref + "]"
		}
		if isRef(a.Name) {
			return namePrefix + a.Name // bare, it would read back as a ref
		}
		return a.Name
	}
	return ""
}

// wireMax and wireSafeByte are Claude Code's grammar for the from= attribute
// of a cross-session envelope.
const wireMax = 300

func wireSafeByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		b == '%' || b == ':' || b == '_' || b == '/' || b == '.' || b == '-'
}

// WireSafe reports whether String() fits Claude Code's from= grammar:
// [A-Za-z0-9%:_/.-], at most 300 bytes. String percent-encodes socket paths,
// so every uds: address Parse accepts is wire safe unless its path holds a
// backslash, which Claude Code leaves unencoded.
func (a Address) WireSafe() bool {
	s := a.String()
	if s == "" || len(s) > wireMax {
		return false
	}
	for i := range len(s) {
		if !wireSafeByte(s[i]) {
			return false
		}
	}
	return true
}

// Dialable says whether a can be sent to as it is: nil for sockets and bridge
// ids, ErrUnsupported for named pipes off Windows, ErrNotDialable for forms
// that need Resolve first.
func (a Address) Dialable() error { return a.dialable(runtime.GOOS) }

func (a Address) dialable(goos string) error {
	switch a.Kind {
	case KindUDS, KindBridge:
		return nil
	case KindPipe:
		if goos == "windows" {
			return nil
		}
		return ErrUnsupported
	}
	return ErrNotDialable
}

// RefLen is the length of a ref in hex digits.
const RefLen = 6

// Ref is the short handle users type for a session: the first 6 hex digits
// of the SHA-256 of its session id.
func Ref(sessionID string) string {
	sum := sha256.Sum256([]byte(sessionID))
	return hex.EncodeToString(sum[:RefLen/2])
}

func isRef(s string) bool {
	if len(s) != RefLen {
		return false
	}
	for i := range len(s) {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}
