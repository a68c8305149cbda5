package bounded

// Clip returns s when it has at most n runes, and otherwise its first n-1
// runes and "…": text from another process shown in a line, an error or an
// event stays short, and is never cut inside a rune. n < 1 gives "".
func Clip(s string, n int) string {
	if n < 1 {
		return ""
	}
	runes, cut := 0, -1
	for i := range s {
		if runes == n-1 {
			cut = i
		}
		if runes == n {
			return s[:cut] + "…"
		}
		runes++
	}
	return s
}
