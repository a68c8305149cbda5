package cli

import "strings"

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
		if distance(typed, lc) <= 2 || (len(typed) >= 2 && strings.HasPrefix(lc, typed)) {
			out = append(out, c)
		}
	}
	return out
}

// distance is the Levenshtein distance of a and b, in bytes: names are
// ASCII.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
