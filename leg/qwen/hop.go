package qwen

import "github.com/sessiongateway/gateway/message"

// ValidHopChain reports whether chain is one a frame may carry: 1 to
// message.MaxHopChain entries, each message.HopTokenLen lower-case hex
// characters: the Claude Code envelope's limits, so a chain read here can
// be written there and back.
func ValidHopChain(chain []string) bool {
	if len(chain) == 0 || len(chain) > message.MaxHopChain {
		return false
	}
	for _, h := range chain {
		if !message.IsHopToken(h) {
			return false
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
	if decodeArray(o["hopChain"], &items) != nil || len(items) > message.MaxHopChain {
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
