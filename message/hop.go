package message

// A message's HopChain is the hop-chain grammar of the Claude Code envelope:
// at most MaxHopChain entries, each HopTokenLen lower-case hex characters.
// The Qwen leg carries the same chain in its hopChain extension, so a chain
// read on one leg can be written on the other; both take the limits from
// here.
const (
	MaxHopChain = 32 // entries the wire grammar allows
	HopTokenLen = 24 // hex characters in one entry
)

// IsHopToken reports whether s is one well-formed hop-chain entry:
// HopTokenLen lower-case hex characters.
func IsHopToken(s string) bool {
	if len(s) != HopTokenLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
