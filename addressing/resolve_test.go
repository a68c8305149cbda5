package addressing

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func uds(p string) Address { return Address{Kind: KindUDS, Path: p} }

// sessionWithRef finds a session id whose ref starts with prefix, so tests can
// build rosters with known refs.
func sessionWithRef(t testing.TB, prefix string) string {
	t.Helper()
	for i := range 1 << 24 {
		id := fmt.Sprintf("session-%d", i)
		if strings.HasPrefix(Ref(id), prefix) {
			return id
		}
	}
	t.Fatalf("no session id with ref prefix %q", prefix)
	return ""
}

func testRoster() []Candidate {
	return []Candidate{
		{Address: uds("/tmp/cc-socks/1.sock"), Name: "work-08", SessionID: "s-1", Protocol: "claude"},
		{Address: uds("/tmp/cc-socks/2.sock"), Name: "work", SessionID: "s-2", Protocol: "claude"},
		{Address: uds("/tmp/cc-socks/3.sock"), Name: "work", SessionID: "s-3", Protocol: "qwen"},
		{Address: uds("/tmp/cc-socks/4.sock"), Name: "Review", SessionID: "s-4", Protocol: "claude"},
		{Address: Address{Kind: KindBridge, ID: "cse_01"}, Name: "cloud", SessionID: "s-5", Protocol: "remote"},
		{Address: uds("/tmp/cc-socks/6.sock"), Name: "Deploy", SessionID: "s-6", Protocol: "claude"},
		{Address: uds("/tmp/cc-socks/7.sock"), Name: "deploy", SessionID: "s-7", Protocol: "claude"},
		{Address: uds("/tmp/cc-socks/8.sock"), SessionID: "s-8", Protocol: "claude"},
	}
}

func mustParse(t testing.TB, s string) Address {
	t.Helper()
	a, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return a
}

func TestResolvePicksOne(t *testing.T) {
	r := testRoster()
	tests := []struct {
		name string
		in   string
		want Candidate
	}{
		{"an exact name picks its session", "work-08", r[0]},
		{"a name matches case-insensitively when nothing matches exactly", "review", r[3]},
		{"an exact case match wins over a case-insensitive one", "Deploy", r[5]},
		{"the other case picks the other session", "deploy", r[6]},
		{"a name with a ref picks one of two twins", "work [" + Ref("s-3") + "]", r[2]},
		{"a ref picks a session case-insensitively by name", "WORK [" + Ref("s-2") + "]", r[1]},
		{"a bracketed ref alone picks its session", "[" + Ref("s-4") + "]", r[3]},
		{"a bare ref alone picks its session", Ref("s-1"), r[0]},
		{"a ref picks a session without a name", "[" + Ref("s-8") + "]", r[7]},
		{"a uds path in the roster picks its session", "uds:/tmp/cc-socks/2.sock", r[1]},
		{"a bare .sock path in the roster picks its session", "/tmp/cc-socks/6.sock", r[5]},
		{"a bridge id in the roster picks its session", "bridge:cse_01", r[4]},
		{"a uds path not in the roster is dialed as it is", "uds:/run/user/1000/cc-socks/99.sock",
			Candidate{Address: uds("/run/user/1000/cc-socks/99.sock")}},
		{"a bridge id not in the roster is dialed as it is", "bridge:cse_02",
			Candidate{Address: Address{Kind: KindBridge, ID: "cse_02"}}},
		{"a pipe not in the roster is dialed as it is", `\\.\pipe\p`,
			Candidate{Address: Address{Kind: KindPipe, Path: `\\.\pipe\p`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(mustParse(t, tt.in), r)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("Resolve(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestResolveAmbiguous(t *testing.T) {
	r := testRoster()
	tests := []struct {
		name   string
		in     string
		roster []Candidate
		want   []Candidate
	}{
		{"a name two sessions share lists both", "work", r, []Candidate{r[1], r[2]}},
		{"a case-insensitive name two sessions share lists both", "DEPLOY", r, []Candidate{r[5], r[6]}},
		{"one socket listed twice with different sessions lists both", "uds:/tmp/x.sock", []Candidate{
			{Address: uds("/tmp/x.sock"), Name: "a", SessionID: "s-a"},
			{Address: uds("/tmp/x.sock"), Name: "b", SessionID: "s-b"},
		}, nil},
	}
	tests[2].want = tests[2].roster
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(mustParse(t, tt.in), tt.roster)
			var ae *AmbiguousError
			if !errors.As(err, &ae) {
				t.Fatalf("Resolve(%q) = %v, want an AmbiguousError", tt.in, err)
			}
			if len(ae.Candidates) != len(tt.want) {
				t.Fatalf("listed %q, want %d entries", ae.Candidates, len(tt.want))
			}
			for i, s := range ae.Candidates {
				got, err := Resolve(mustParse(t, s), tt.roster)
				if err != nil || got != tt.want[i] {
					t.Errorf("listed %q resolves to %+v, %v; want %+v", s, got, err, tt.want[i])
				}
			}
		})
	}

	t.Run("the message lists every choice in the form to type", func(t *testing.T) {
		roster := []Candidate{
			{Address: uds("/tmp/a.sock"), Name: "work", SessionID: sessionWithRef(t, "3f")},
			{Address: uds("/tmp/b.sock"), Name: "work", SessionID: sessionWithRef(t, "77")},
		}
		_, err := Resolve(mustParse(t, "work"), roster)
		want := fmt.Sprintf(`ambiguous name "work": 2 sessions match; use one of: "work [%s]", "work [%s]"`,
			roster[0].Ref(), roster[1].Ref())
		if err == nil || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	})

	t.Run("a name and ref collision lists the uds addresses", func(t *testing.T) {
		// Two entries for one session id stand in for a SHA-256 prefix collision.
		roster := []Candidate{
			{Address: uds("/tmp/a.sock"), Name: "work", SessionID: "same"},
			{Address: uds("/tmp/b.sock"), Name: "work", SessionID: "same"},
		}
		_, err := Resolve(mustParse(t, "work"), roster)
		var ae *AmbiguousError
		if !errors.As(err, &ae) {
			t.Fatalf("got %v, want an AmbiguousError", err)
		}
		if want := []string{"uds:/tmp/a.sock", "uds:/tmp/b.sock"}; !slices.Equal(ae.Candidates, want) {
			t.Fatalf("listed %q, want %q", ae.Candidates, want)
		}
	})

	t.Run("an entry listed twice is one match", func(t *testing.T) {
		c := Candidate{Address: uds("/tmp/a.sock"), Name: "work", SessionID: "s"}
		got, err := Resolve(mustParse(t, "work"), []Candidate{c, c})
		if err != nil || got != c {
			t.Fatalf("got %+v, %v; want %+v", got, err, c)
		}
	})
}

func TestResolveNotFound(t *testing.T) {
	r := testRoster()
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"a typo suggests the close name", "wrok-08", []string{r[0].Display()}},
		{"a prefix suggests every name it starts", "wor", []string{r[0].Display(), r[1].Display(), r[2].Display()}},
		{"a substring suggests the names containing it", "eview", []string{r[3].Display()}},
		{"a wrong ref suggests the sessions of that name first", "work [000000]",
			[]string{r[1].Display(), r[2].Display(), r[0].Display()}},
		{"a name far from every other suggests nothing", "zzzzzzzz", nil},
		{"a ref that matches nothing suggests nothing", "[000000]", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(mustParse(t, tt.in), r)
			var nf *NotFoundError
			if !errors.As(err, &nf) {
				t.Fatalf("Resolve(%q) = %v, want a NotFoundError", tt.in, err)
			}
			if !slices.Equal(nf.Suggestions, tt.want) {
				t.Fatalf("suggested %q, want %q", nf.Suggestions, tt.want)
			}
			if nf.Query != mustParse(t, tt.in).String() {
				t.Fatalf("query %q, want the canonical input", nf.Query)
			}
		})
	}

	t.Run("at most five suggestions are given", func(t *testing.T) {
		var roster []Candidate
		for i := range 8 {
			roster = append(roster, Candidate{Name: fmt.Sprintf("w%d", i), SessionID: fmt.Sprint(i)})
		}
		_, err := Resolve(mustParse(t, "w"), roster)
		var nf *NotFoundError
		if !errors.As(err, &nf) || len(nf.Suggestions) != 5 {
			t.Fatalf("got %v, want five suggestions", err)
		}
	})

	t.Run("the message says what to type instead", func(t *testing.T) {
		_, err := Resolve(mustParse(t, "wrok-08"), r)
		want := fmt.Sprintf(`no session matches name "wrok-08"; did you mean %q?`, r[0].Display())
		if err == nil || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
		_, err = Resolve(mustParse(t, "zzz"), r)
		if want := `no session matches name "zzz"; list the sessions to see who is reachable`; err == nil || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	})
}

type fakeDID map[string]Address

func (f fakeDID) ResolveDID(ctx context.Context, a Address) (Address, error) {
	if err := ctx.Err(); err != nil {
		return Address{}, err
	}
	r, ok := f[a.String()]
	if !ok {
		return Address{}, errors.New("unknown did")
	}
	return r, nil
}

func TestResolveDID(t *testing.T) {
	r := testRoster()
	did := fakeDID{
		"did:web:work08":    uds("/tmp/cc-socks/1.sock"),
		"did:web:by-name":   {Kind: KindName, Name: "Review"},
		"did:web:loop":      {Kind: KindDID, Method: "web", ID: "work08"},
		"did:web:garbage":   {Kind: KindUDS, Path: "relative"},
		"did:web:elsewhere": uds("/tmp/other.sock"),
	}
	t.Run("a did resolves to the session at its address", func(t *testing.T) {
		got, err := ResolveContext(context.Background(), mustParse(t, "did:web:work08"), r, did)
		if err != nil || got != r[0] {
			t.Fatalf("got %+v, %v; want %+v", got, err, r[0])
		}
	})
	t.Run("a did may resolve to a name", func(t *testing.T) {
		got, err := ResolveContext(context.Background(), mustParse(t, "did:web:by-name"), r, did)
		if err != nil || got != r[3] {
			t.Fatalf("got %+v, %v; want %+v", got, err, r[3])
		}
	})
	t.Run("a did to a socket outside the roster is dialed as it is", func(t *testing.T) {
		got, err := ResolveContext(context.Background(), mustParse(t, "did:web:elsewhere"), r, did)
		if err != nil || got != (Candidate{Address: uds("/tmp/other.sock")}) {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("a did whose target is not in the roster says both", func(t *testing.T) {
		_, err := ResolveContext(context.Background(), mustParse(t, "did:web:by-name"), nil, did)
		var nf *NotFoundError
		if !errors.As(err, &nf) || !strings.Contains(err.Error(), "did:web:by-name resolved to Review") {
			t.Fatalf("got %v, want a NotFoundError naming the did", err)
		}
	})
	t.Run("a did resolving to a did is refused", func(t *testing.T) {
		_, err := ResolveContext(context.Background(), mustParse(t, "did:web:loop"), r, did)
		if !errors.Is(err, ErrDIDLoop) {
			t.Fatalf("got %v, want ErrDIDLoop", err)
		}
	})
	t.Run("a did resolving to an invalid address is refused", func(t *testing.T) {
		_, err := ResolveContext(context.Background(), mustParse(t, "did:web:garbage"), r, did)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Reason != ReasonPathNotAbsolute {
			t.Fatalf("got %v, want a ParseError", err)
		}
	})
	t.Run("a resolver failure is passed on", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := ResolveContext(ctx, mustParse(t, "did:web:work08"), r, did)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	})
	t.Run("without a resolver a did is refused", func(t *testing.T) {
		_, err := Resolve(mustParse(t, "did:web:work08"), r)
		if !errors.Is(err, ErrNoDIDResolver) {
			t.Fatalf("got %v, want ErrNoDIDResolver", err)
		}
	})
	t.Run("the zero address does not resolve", func(t *testing.T) {
		_, err := Resolve(Address{}, r)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Reason != ReasonEmpty {
			t.Fatalf("got %v, want an empty-address ParseError", err)
		}
	})
}

func TestDisplay(t *testing.T) {
	tests := []struct {
		name string
		c    Candidate
		want string
	}{
		{"a named session shows name and ref", Candidate{Name: "work", SessionID: "abc"}, "work [ba7816]"},
		{"an unnamed session shows its ref", Candidate{SessionID: "abc", Address: uds("/a.sock")}, "[ba7816]"},
		{"a name that would not parse shows the ref", Candidate{Name: "a[b]", SessionID: "abc"}, "[ba7816]"},
		{"a session without id shows its name", Candidate{Name: "work", Address: uds("/a.sock")}, "work"},
		{"a hex name without id is forced to a name", Candidate{Name: "abcdef"}, "name:abcdef"},
		{"a session with neither shows its address", Candidate{Address: uds("/a.sock")}, "uds:/a.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Display(); got != tt.want {
				t.Fatalf("Display() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLevenshtein(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"work", "work", 0}, {"work", "wrok", 2}, {"work", "wor", 1},
		{"kitten", "sitting", 3}, {"ab", "abcdef", 3}, {"é", "e", 1},
	}
	for _, tt := range tests {
		if got := levenshtein(tt.a, tt.b, 2); got != min(tt.want, 3) {
			t.Errorf("levenshtein(%q, %q, 2) = %d, want %d", tt.a, tt.b, got, min(tt.want, 3))
		}
	}
}

// TestEveryDisplayResolvesToItsCandidate checks, over random rosters full of
// shared names, case twins and ref collisions, that the form Resolve offers
// for each session picks that session and no other.
func TestEveryDisplayResolvesToItsCandidate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	unique := 0
	for range 2000 {
		roster := randomRoster(rng)
		unique += checkUniqueForms(t, roster)
	}
	if unique == 0 {
		t.Fatal("no roster had a distinguishable candidate; the generator is broken")
	}
}

var rosterNames = []string{"", "work", "Work", "WORK", "abcdef", "a[b", "review", "w"}

func randomRoster(rng *rand.Rand) []Candidate {
	roster := make([]Candidate, 1+rng.IntN(6))
	for i := range roster {
		roster[i] = Candidate{
			Name:      rosterNames[rng.IntN(len(rosterNames))],
			SessionID: fmt.Sprint(rng.IntN(4)), // few ids: refs collide often
			Protocol:  "claude",
		}
		if n := rng.IntN(5); n > 0 { // sometimes no address at all
			roster[i].Address = uds(fmt.Sprintf("/tmp/%d.sock", n))
		}
	}
	return roster
}

// checkUniqueForms fails t unless uniqueForm picks each candidate that can be
// told apart at all, and every ambiguity lists forms that pick its matches.
// It returns how many candidates were distinguishable.
func checkUniqueForms(t *testing.T, roster []Candidate) int {
	t.Helper()
	n := 0
	for _, c := range roster {
		form := uniqueForm(c, roster)
		if a, err := Parse(form); err == nil {
			if got, err := Resolve(a, roster); err == nil && got == c {
				n++
				continue
			}
		}
		// A miss is allowed only when no input at all picks c.
		for _, q := range allForms(c) {
			if a, err := Parse(q); err == nil {
				if got, err := Resolve(a, roster); err == nil && got == c {
					t.Fatalf("roster %+v: form %q misses %+v, yet %q picks it", roster, form, c, q)
				}
			}
		}
	}
	for _, c := range roster {
		for _, q := range allForms(c) {
			a, err := Parse(q)
			if err != nil {
				continue
			}
			_, err = Resolve(a, roster)
			var ae *AmbiguousError
			if !errors.As(err, &ae) {
				continue
			}
			checkAmbiguity(t, roster, ae)
		}
	}
	return n
}

func checkAmbiguity(t *testing.T, roster []Candidate, ae *AmbiguousError) {
	t.Helper()
	var picked []Candidate
	for _, s := range ae.Candidates {
		a, err := Parse(s)
		if err != nil {
			t.Fatalf("roster %+v: listed %q does not parse: %v", roster, s, err)
		}
		got, err := Resolve(a, roster)
		if err != nil {
			// Allowed only for candidates that nothing can tell apart.
			var again *AmbiguousError
			if !errors.As(err, &again) {
				t.Fatalf("roster %+v: listed %q fails: %v", roster, s, err)
			}
			continue
		}
		if slices.Contains(picked, got) {
			t.Fatalf("roster %+v: two listed forms pick %+v", roster, got)
		}
		picked = append(picked, got)
	}
}

// allForms is every input a user could try for c.
func allForms(c Candidate) []string {
	return []string{
		c.Name, namePrefix + c.Name, c.Name + " [" + c.Ref() + "]", "[" + c.Ref() + "]",
		c.Display(), c.Address.String(),
	}
}

func TestANativeRefAlsoResolves(t *testing.T) {
	roster := []Candidate{
		{Address: Address{Kind: KindUDS, Path: "/tmp/cc-socks/1.sock"}, Name: "work", SessionID: "a", NativeRef: "abc123"},
		{Address: Address{Kind: KindUDS, Path: "/tmp/cc-socks/2.sock"}, Name: "work", SessionID: "b", NativeRef: "def456"},
	}
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"a bracketed native ref finds its session", "[def456]", "/tmp/cc-socks/2.sock"},
		{"a name with a native ref pins one twin", "work [abc123]", "/tmp/cc-socks/1.sock"},
		{"the session-id ref still works beside it", "work [" + Ref("b") + "]", "/tmp/cc-socks/2.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Resolve(a, roster)
			if err != nil || c.Address.Path != tt.want {
				t.Fatalf("got %v, %v; want %s", c.Address, err, tt.want)
			}
		})
	}
}
