package addressing

import (
	"errors"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		f.Add(tt.in)
	}
	for _, s := range []string{
		"", "uds:", "did:", "did:a:%", "did:a:%4", "[", "]", "[]", "name:", "name:[abcdef]",
		`\\.\pipe\`, "//./pipe/", "/.sock", "x [abcdef", " [abcdef] ", "name:abcdef [012345]",
		"a\u00a0", "\u00a0[abcdef]", "é [abcdef]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Reason == 0 || pe.Input != s || err.Error() == "" {
				t.Fatalf("Parse(%q) failed with %#v, want a *ParseError with a reason", s, err)
			}
			return // rejecting is fine; crashing or hanging is not
		}
		out := a.String()
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(%q) = %#v, whose String %q does not parse: %v", s, a, out, err)
		}
		if again != a {
			t.Fatalf("round trip of %q changed %#v into %#v via %q", s, a, again, out)
		}
		if again.String() != out {
			t.Fatalf("String is not stable: %q then %q", out, again.String())
		}
		if a.WireSafe() && (len(out) > wireMax || strings.ContainsAny(out, " []\\\"<>")) {
			t.Fatalf("%q claims to be wire safe", out)
		}
		_ = a.Dialable()
	})
}

// FuzzResolveAmbiguity builds a roster from fuzz input, one candidate per
// line as "name|session id|socket path", and checks that every candidate
// that can be told apart is picked by the form Resolve offers for it.
func FuzzResolveAmbiguity(f *testing.F) {
	f.Add("work|1|/a.sock\nwork|2|/b.sock\nWork|3|/c.sock")
	f.Add("work|1|/a.sock\nwork|1|/b.sock\nwork|1|/a.sock")
	f.Add("abcdef|1|\nabcdef|2|\n|3|/x.sock\n|3|/y.sock")
	f.Add("a[b|1|/a.sock\nwork|1|/a.sock\n" + Ref("1") + "||/z.sock")
	f.Fuzz(func(t *testing.T, in string) {
		lines := strings.Split(in, "\n")
		if len(lines) > 16 {
			return
		}
		var roster []Candidate
		for _, l := range lines {
			name, rest, _ := strings.Cut(l, "|")
			sid, p, _ := strings.Cut(rest, "|")
			c := Candidate{Name: name, SessionID: sid}
			if p != "" {
				c.Address = Address{Kind: KindUDS, Path: p} // not validated: rosters come from other processes
			}
			roster = append(roster, c)
		}
		checkUniqueForms(t, roster)
	})
}
