package cli

import (
	"strings"

	"github.com/sessiongateway/gateway/internal/settings"
)

// Suggest returns the candidates close to typed: within two edits, or
// starting with it. It is the "did you mean" of a misspelt flag or key.
func Suggest(typed string, candidates []string) []string {
	typed = strings.ToLower(typed)
	var out []string
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == typed {
			continue
		}
		if settings.EditDistance(typed, lc) <= 2 || (len(typed) >= 2 && strings.HasPrefix(lc, typed)) {
			out = append(out, c)
		}
	}
	return out
}
