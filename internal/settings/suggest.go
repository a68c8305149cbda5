package settings

import "strings"

// didYouMean is the known key nearest to key, when it is near enough to be
// a misspelling (an edit or two, or the same words with _ for -); "" if
// none is.
func didYouMean(key string, known map[string]bool) string {
	k := strings.ReplaceAll(strings.ToLower(key), "_", "-")
	best, bestDist := "", 3
	if len(k) <= 4 {
		bestDist = 2
	}
	for name := range known {
		if d := EditDistance(k, name); d < bestDist || (d == bestDist && best != "" && name < best) {
			best, bestDist = name, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b, in bytes (names
// are ASCII); the did-you-mean of config keys and of the CLI's flags.
func EditDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 { // keys are short; a long one matches nothing
		return 1 << 10
	}
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
