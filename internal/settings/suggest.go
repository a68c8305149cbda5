package settings

import (
	"flag"
	"strings"
)

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

// Misspelt is a variable with the prefix that no flag reads, and the one
// it is near.
type Misspelt struct{ Var, Want string }

// MisspeltEnv finds the variables in environ ("NAME=value") that start
// with prefix, are no flag's in fs (nor a flag's _FILE), and are near one's
// (didYouMean): a typo that would otherwise be ignored in silence. One far
// from every flag is left alone: other programs may share the prefix.
func MisspeltEnv(fs *flag.FlagSet, prefix string, environ []string) []Misspelt {
	known, read := map[string]bool{}, map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		known[f.Name] = true
		read[EnvName(prefix, f.Name)], read[EnvName(prefix, f.Name)+"_FILE"] = true, true
	})
	var out []Misspelt
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || rest == "" || read[name] {
			continue
		}
		if near := didYouMean(rest, known); near != "" {
			out = append(out, Misspelt{Var: name, Want: EnvName(prefix, near)})
		}
	}
	return out
}
