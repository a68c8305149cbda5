package qwen

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"log/slog"
)

// Token is a bearer secret: an inbox's ipcToken, a child token or a
// controller token. slog, fmt's %v and %s and %#v print it as [redacted];
// string(t) is the only way to the value, for the wire.
type Token string

const redacted = "[redacted]"

// LogValue keeps the token out of structured logs.
func (Token) LogValue() slog.Value { return slog.StringValue(redacted) }

// String keeps the token out of fmt output.
func (Token) String() string { return redacted }

// GoString keeps the token out of %#v.
func (Token) GoString() string { return redacted }

// Equal compares in constant time (for tokens of equal length; the length
// is not secret: every token kind has a fixed one).
func (t Token) Equal(other Token) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(other)) == 1
}

// Environment variables Qwen Code sets for the processes a session starts:
// the session's inbox path, and the child token that authenticates them as
// "a process this session started" (origin="own-process").
const (
	EnvMessagingSocket = "QWEN_CODE_MESSAGING_SOCKET"
	EnvMessagingToken  = "QWEN_CODE_MESSAGING_TOKEN"
)

// tokenBytes is the size of an ipcToken and of a child token: 32 random
// bytes, 64 lowercase hex characters.
const tokenBytes = 32

// NewIPCToken mints an inbox token for our record's ipcToken.
func NewIPCToken() Token { return Token(randomHex(tokenBytes)) }

// NewChildToken mints the token a process the gateway starts presents to the
// gateway's inbox. It is a different secret from the ipcToken: the inbox
// tells the two apart and trusts a child more than a peer.
func NewChildToken() Token { return Token(randomHex(tokenBytes)) }

// ChildEnv is what to add to the environment of a process the gateway
// starts, so that it can message the gateway as its own process does in
// Qwen Code.
func ChildEnv(socketPath string, child Token) []string {
	return []string{EnvMessagingSocket + "=" + socketPath, EnvMessagingToken + "=" + string(child)}
}

// isHexToken reports whether s is n lowercase hex characters.
func isHexToken(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// randomHex returns n random bytes as lowercase hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on supported platforms (Go 1.24+ panics instead)
	return hex.EncodeToString(b)
}
