package qwen

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Qwen Code is JavaScript: its lengths are UTF-16 code units (String.length)
// or code points (Array.from), its trim is ECMAScript's, and its labels are
// flattened with a Unicode regular expression. These helpers reproduce each
// one where a limit depends on it.

// utf16Len is JavaScript's String.length of s.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// utf16Prefix is s cut to at most n UTF-16 code units, as s.slice(0, n)
// would, except that it never splits a surrogate pair (Go strings cannot
// hold half of one): such a cut stops one unit short.
func utf16Prefix(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}

// isJSSpace is ECMAScript's WhiteSpace or LineTerminator, what
// String.prototype.trim removes. It differs from unicode.IsSpace: U+FEFF is
// in, U+0085 is out.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0xFEFF, 0x2028, 0x2029:
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// jsTrim is String.prototype.trim.
func jsTrim(s string) string { return strings.TrimFunc(s, isJSSpace) }

// isInvisible is the class Qwen Code flattens out of labels:
// [\p{Cc}\p{Cf}\p{Zl}\p{Zp}].
func isInvisible(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// maxLabelPoints is the code-point cap of a flattened label (fromName, cwd,
// a controller label before its own tighter check).
const maxLabelPoints = 200

// FlattenLabel makes a claimed label safe to show on one line, as Qwen Code
// does before showing any fromName, name, cwd or controller label: every run
// of control, format and line or paragraph separator characters becomes one
// space, the ends are trimmed, and past 200 code points it is cut to 199
// and an ellipsis.
func FlattenLabel(s string) string {
	var b strings.Builder
	inRun := false
	for _, r := range s {
		if isInvisible(r) {
			if !inRun {
				b.WriteByte(' ')
			}
			inRun = true
			continue
		}
		inRun = false
		b.WriteRune(r)
	}
	return capPoints(jsTrim(b.String()), maxLabelPoints)
}

// capPoints cuts s to n code points, the last one an ellipsis, when it has
// more than n.
func capPoints(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + "…"
}

// maxNamePoints caps a session name in a record.
const maxNamePoints = 40

// SessionName is the name a record carries: the chosen name flattened and
// cut to 40 code points, or, when that is blank, DeriveName(cwd, sessionID).
func SessionName(chosen, cwd, sessionID string) string {
	if n := FlattenLabel(chosen); n != "" {
		return capPoints(n, maxNamePoints)
	}
	return DeriveName(cwd, sessionID)
}

// DeriveName is Qwen Code's default session name: the cwd's base name with
// every run of characters other than letters, marks, digits, '.', '_' and
// '-' turned into '-', leading and trailing dashes removed, cut to 32 code
// points ("session" if nothing is left), then '-' and the first two hex
// characters of sha256(sessionID).
//
// Qwen Code first normalises the base name to NFC; this does not (it would
// need golang.org/x/text), so a decomposed base name derives differently.
// Only our own record uses it, and there the name is ours to choose.
func DeriveName(cwd, sessionID string) string {
	base := filepath.Base(cwd)
	if cwd == "" {
		base = ""
	}
	var b strings.Builder
	inRun := false
	for _, r := range base {
		if unicode.In(r, unicode.L, unicode.M, unicode.N) || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
			inRun = false
			continue
		}
		if !inRun {
			b.WriteByte('-')
		}
		inRun = true
	}
	name := strings.Trim(b.String(), "-")
	if utf8.RuneCountInString(name) > 32 {
		i, count := 0, 0
		for i = range name {
			if count == 32 {
				break
			}
			count++
		}
		name = name[:i]
	}
	if name == "" {
		name = "session"
	}
	sum := sha256.Sum256([]byte(sessionID))
	return name + "-" + hex.EncodeToString(sum[:1])
}

// Ref is the handle Qwen Code shows after a name: the first 6 hex of
// sha256(sessionId).
func Ref(sessionID string) string {
	sum := sha256.Sum256([]byte(sessionID))
	return hex.EncodeToString(sum[:3])
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func lowerUnicode(s string) string { return strings.ToLower(s) }
