package addressing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Candidate is one session a roster offers to Resolve.
type Candidate struct {
	Address   Address // how to reach it: uds:, bridge:, a pipe
	Name      string
	SessionID string
	Protocol  string // "claude", "qwen", "remote"
	// NativeRef is the ref the session's own CLI shows, when it computes refs
	// otherwise (Claude Code 2.1.332 hashes "session:"+socket path). A ref
	// matches either, so refs copied from ListAgents work too.
	NativeRef string
}

// hasRef reports whether ref names c.
func (c Candidate) hasRef(ref string) bool {
	return ref != "" && (c.Ref() == ref || c.NativeRef == ref)
}

// Ref is the session's ref, or "" when it has no session id (every id-less
// session would otherwise share the ref of "").
func (c Candidate) Ref() string {
	if c.SessionID == "" {
		return ""
	}
	return Ref(c.SessionID)
}

// Display is "name [ref]", the form users see and type back. When the name
// cannot be parsed as one (empty, or breaking the name rules) it is "[ref]",
// and with no ref either it is the address ("" when there is none). It is
// ambiguous only when two sessions of one name share a ref (a SHA-256 prefix
// collision, or one session listed at two addresses); Resolve's errors then
// list the address instead.
func (c Candidate) Display() string {
	ref := c.Ref()
	if checkName(c.Name) == 0 {
		return Address{Kind: KindName, Name: c.Name, Ref: ref}.String()
	}
	if ref != "" {
		return Address{Kind: KindRef, Ref: ref}.String()
	}
	return c.Address.String()
}

// DIDResolver turns a did: address into one the roster knows.
type DIDResolver interface {
	ResolveDID(ctx context.Context, a Address) (Address, error)
}

// Errors from ResolveContext, matched with errors.Is.
var (
	ErrNoDIDResolver = errors.New("no did resolver is configured; address the session by name, [ref] or uds: path instead")
	ErrDIDLoop       = errors.New("the did resolved to another did; the resolver must return a uds:, bridge:, name or ref address")
)

// NotFoundError says no session in the roster matched.
type NotFoundError struct {
	Kind        Kind
	Query       string   // the address as given, canonical
	Suggestions []string // at most 5 inputs that each resolve to one close match
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("no session matches %s %q", noun(e.Kind), e.Query)
	switch len(e.Suggestions) {
	case 0:
		return msg + "; list the sessions to see who is reachable"
	case 1:
		return msg + "; did you mean " + quoteAll(e.Suggestions) + "?"
	}
	return msg + "; did you mean one of: " + quoteAll(e.Suggestions) + "?"
}

// AmbiguousError says several sessions matched. Each of Candidates, given to
// Parse and Resolve with the same roster, picks exactly one of them.
type AmbiguousError struct {
	Kind       Kind
	Query      string
	Candidates []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("ambiguous %s %q: %d sessions match; use one of: %s",
		noun(e.Kind), e.Query, len(e.Candidates), quoteAll(e.Candidates))
}

func noun(k Kind) string {
	switch k {
	case KindName, KindRef:
		return k.String()
	}
	return "address"
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// Resolve picks the one candidate a names. A uds:, pipe or bridge: address
// not in the roster resolves to a Candidate holding only that address: it
// can be dialed without a registry entry. Names match case-sensitively
// first and case-insensitively only when nothing matches exactly; a ref
// narrows a name. A did: address needs ResolveContext.
func Resolve(a Address, roster []Candidate) (Candidate, error) {
	return ResolveContext(context.Background(), a, roster, nil)
}

// ResolveContext is Resolve with a DID resolver: a did: address is turned
// into another address by did, and that one is resolved against the roster.
func ResolveContext(ctx context.Context, a Address, roster []Candidate, did DIDResolver) (Candidate, error) {
	if a.Kind == KindDID {
		if did == nil {
			return Candidate{}, fmt.Errorf("cannot resolve %s: %w", a, ErrNoDIDResolver)
		}
		r, err := did.ResolveDID(ctx, a)
		if err != nil {
			return Candidate{}, fmt.Errorf("resolve %s: %w", a, err)
		}
		// Reparse so a resolver cannot hand back an address Parse would refuse.
		p, err := Parse(r.String())
		if err != nil {
			return Candidate{}, fmt.Errorf("resolve %s: the did resolver returned an unusable address: %w", a, err)
		}
		if p.Kind == KindDID {
			return Candidate{}, fmt.Errorf("resolve %s to %s: %w", a, p, ErrDIDLoop)
		}
		c, err := resolve(p, roster)
		if err != nil {
			return Candidate{}, fmt.Errorf("%s resolved to %s: %w", a, p, err)
		}
		return c, nil
	}
	return resolve(a, roster)
}

func resolve(a Address, roster []Candidate) (Candidate, error) {
	switch a.Kind {
	case KindUDS, KindPipe, KindBridge, KindName, KindRef:
	default:
		return Candidate{}, &ParseError{Input: a.String(), Reason: ReasonEmpty}
	}
	m := match(a, roster)
	switch {
	case len(m) == 1:
		return m[0], nil
	case len(m) > 1:
		forms := make([]string, len(m))
		for i, c := range m {
			forms[i] = uniqueForm(c, roster)
		}
		return Candidate{}, &AmbiguousError{Kind: a.Kind, Query: a.String(), Candidates: forms}
	case a.Kind == KindName || a.Kind == KindRef:
		return Candidate{}, &NotFoundError{Kind: a.Kind, Query: a.String(), Suggestions: suggest(a, roster)}
	}
	return Candidate{Address: a}, nil
}

// match returns the distinct candidates a selects, in roster order.
func match(a Address, roster []Candidate) []Candidate {
	var m []Candidate
	add := func(keep func(Candidate) bool) {
		for _, c := range roster {
			if keep(c) && !slices.Contains(m, c) {
				m = append(m, c)
			}
		}
	}
	switch a.Kind {
	case KindUDS, KindPipe:
		add(func(c Candidate) bool { return c.Address.Kind == a.Kind && c.Address.Path == a.Path })
	case KindBridge:
		add(func(c Candidate) bool { return c.Address.Kind == a.Kind && c.Address.ID == a.ID })
	case KindRef:
		add(func(c Candidate) bool { return c.hasRef(a.Ref) })
	case KindName:
		refOK := func(c Candidate) bool { return a.Ref == "" || c.hasRef(a.Ref) }
		add(func(c Candidate) bool { return c.Name == a.Name && refOK(c) })
		if len(m) == 0 {
			add(func(c Candidate) bool { return strings.EqualFold(c.Name, a.Name) && refOK(c) })
		}
	}
	return m
}

// uniqueForm is an input that resolves to c alone: its Display, or its
// address when the Display is shared (a ref collision within one name). If
// neither is unique, c cannot be told apart from another entry and Display is
// returned anyway.
func uniqueForm(c Candidate, roster []Candidate) string {
	d := c.Display()
	if picks(d, c, roster) {
		return d
	}
	if s := c.Address.String(); s != "" && picks(s, c, roster) {
		return s
	}
	return d
}

func picks(s string, c Candidate, roster []Candidate) bool {
	a, err := Parse(s)
	if err != nil {
		return false
	}
	m := match(a, roster)
	return len(m) == 1 && m[0] == c
}

const maxSuggestions = 5

// suggest lists sessions whose name is close to a's: equal or containing it
// ignoring case, or within two edits. Closest first.
func suggest(a Address, roster []Candidate) []string {
	if a.Kind != KindName {
		return nil
	}
	q := strings.ToLower(a.Name)
	type near struct {
		c    Candidate
		dist int
	}
	var ns []near
	for _, c := range roster {
		if c.Name == "" {
			continue
		}
		n := strings.ToLower(c.Name)
		d := -1
		switch {
		case n == q:
			d = 0 // the name is right; the ref was not
		case strings.HasPrefix(n, q):
			d = 1
		case strings.Contains(n, q):
			d = 2
		default:
			if e := levenshtein(q, n, 2); e <= 2 {
				d = 2 + e
			}
		}
		if d >= 0 {
			ns = append(ns, near{c, d})
		}
	}
	slices.SortStableFunc(ns, func(x, y near) int { return cmp.Compare(x.dist, y.dist) })
	var out []string
	for _, n := range ns {
		if len(out) == maxSuggestions {
			break
		}
		if f := uniqueForm(n.c, roster); !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// levenshtein is the edit distance between a and b in runes, or limit+1
// when it is over limit (lengths further apart than limit are not compared).
func levenshtein(a, b string, limit int) int {
	if d := utf8.RuneCountInString(a) - utf8.RuneCountInString(b); d > limit || -d > limit {
		return limit + 1
	}
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(rb)], limit+1)
}
