package claude

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"

	"github.com/sessiongateway/gateway/message"
)

// Hop tokens mark the sessions a message has passed through, in the envelope's
// hop-chain. Claude Code 2.1.332 computes its own as
// hex(HMAC-SHA256(key = 32 random bytes drawn at process start, msg = its own
// "uds:" address)) cut to 24 characters: unguessable from outside and new on
// every boot, yet stable for the life of the process.
// The chain's limits are message.MaxHopChain and message.HopTokenLen.
const hopKeyLen = 32

// NewHopKey draws the per-boot HMAC key for HopToken.
func NewHopKey() ([]byte, error) {
	k := make([]byte, hopKeyLen)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return k, nil
}

// HopToken is the hop-chain entry for address under key. address must be
// spelled exactly as it goes out in the envelope's from attribute: "uds:"
// followed by the canonical socket path with every byte outside
// [A-Za-z0-9:_/.\-] percent-encoded (upper-case hex), as Claude Code prints it.
// HopToken adds no prefix of its own, so bridge addresses ("bridge:<id>") work
// the same way.
func HopToken(key []byte, address string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(address))
	return hex.EncodeToString(m.Sum(nil))[:message.HopTokenLen]
}

// AppendHop returns a new chain: chain followed by tok. It never mutates chain.
// An empty tok appends nothing. Like Claude Code, it keeps only the newest
// message.MaxHopChain entries, so the result always fits the envelope grammar.
func AppendHop(chain []string, tok string) []string {
	out := make([]string, 0, len(chain)+1)
	out = append(out, chain...)
	if tok != "" {
		out = append(out, tok)
	}
	if len(out) > message.MaxHopChain {
		out = out[len(out)-message.MaxHopChain:]
	}
	return out
}
