package answerfmt

import (
	"strings"
	"unicode"
)

// QuoteSpec double-quotes s for a reply, escaping only what the reply's
// tokenizer unescapes.
func QuoteSpec(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// ShellWord is s bare when it needs no quotes, else quoted.
func ShellWord(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-_.?/:@%+,", r)
	}) {
		return QuoteSpec(s)
	}
	return s
}
