package bounded

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipKeepsShortTextAndCutsLongTextOnARuneBoundary(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"an empty text stays empty", "", 5, ""},
		{"a text shorter than n is kept", "abc", 5, "abc"},
		{"a text of exactly n runes is kept", "abcde", 5, "abcde"},
		{"a text one rune over is cut to n-1 runes and an ellipsis", "abcdef", 5, "abcd…"},
		{"a long text is cut", strings.Repeat("x", 1000), 3, "xx…"},
		{"runes of several bytes count as one", "ééééé", 5, "ééééé"},
		{"runes of several bytes are never split", "éééééé", 5, "éééé…"},
		{"an invalid byte counts as one rune", "\xff\xffabcd", 3, "\xff\xff…"},
		{"n of one leaves only the ellipsis", "abc", 1, "…"},
		{"n of one keeps a one-rune text", "a", 1, "a"},
		{"n below one gives nothing", "abc", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Clip(tc.s, tc.n)
			if got != tc.want {
				t.Fatalf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
			if tc.n > 0 && utf8.RuneCountInString(got) > tc.n {
				t.Fatalf("Clip(%q, %d) = %q has more than %d runes", tc.s, tc.n, got, tc.n)
			}
		})
	}
}

func FuzzClip(f *testing.F) {
	f.Add("héllo wörld", 4)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 1 << 16
		got := Clip(s, n)
		switch {
		case n < 1:
			if got != "" {
				t.Fatalf("Clip(%q, %d) = %q, want empty", s, n, got)
			}
		case utf8.RuneCountInString(s) <= n:
			if got != s {
				t.Fatalf("Clip(%q, %d) = %q, want it whole", s, n, got)
			}
		default:
			if utf8.RuneCountInString(got) != n || !strings.HasSuffix(got, "…") || !strings.HasPrefix(s, strings.TrimSuffix(got, "…")) {
				t.Fatalf("Clip(%q, %d) = %q: want n runes, a prefix of s and an ellipsis", s, n, got)
			}
		}
	})
}
