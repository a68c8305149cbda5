package qwen

// Hop-chain limits, the Claude Code envelope's, so a chain read here can be
// written there and back.
const (
	MaxHopChain = 32 // entries
	HopTokenLen = 24 // lower-case hex characters in one entry
)

// ValidHopChain reports whether chain is one a frame may carry: 1 to
// MaxHopChain entries, each HopTokenLen lower-case hex characters.
func ValidHopChain(chain []string) bool {
	if len(chain) == 0 || len(chain) > MaxHopChain {
		return false
	}
	for _, h := range chain {
		if len(h) != HopTokenLen {
			return false
		}
		for i := 0; i < len(h); i++ {
			if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// parseHopChain reads the hopChain extension: nil unless it is an array
// that passes ValidHopChain.
func parseHopChain(o object) []string {
	if o.kind("hopChain") != kindArray {
		return nil
	}
	var items []any
	if decodeArray(o["hopChain"], &items) != nil || len(items) > MaxHopChain {
		return nil
	}
	chain := make([]string, 0, len(items))
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil
		}
		chain = append(chain, s)
	}
	if !ValidHopChain(chain) {
		return nil
	}
	return chain
}
