package cli

import (
	"fmt"
	"sort"
	"strings"
)

// ShortLen is how many characters of an id the tables show; any unique
// prefix is accepted back.
const ShortLen = 8

// Short is id cut to ShortLen characters.
func Short(id string) string {
	if len(id) <= ShortLen {
		return id
	}
	return id[:ShortLen]
}

// AmbiguousError is a prefix that more than one id starts with.
type AmbiguousError struct {
	Prefix string
	IDs    []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s is the start of %d ids: %s; type more of it", e.Prefix, len(e.IDs), strings.Join(e.IDs, ", "))
}

// Resolve finds the one id among ids that equals s or starts with it:
// ok is false when none does, and an AmbiguousError names them when
// several do. Case is ignored, as people type hex.
func Resolve(s string, ids []string) (id string, ok bool, err error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", false, nil
	}
	var hits []string
	for _, id := range ids {
		l := strings.ToLower(id)
		if l == s {
			return id, true, nil
		}
		if strings.HasPrefix(l, s) {
			hits = append(hits, id)
		}
	}
	switch len(hits) {
	case 0:
		return "", false, nil
	case 1:
		return hits[0], true, nil
	}
	sort.Strings(hits)
	return "", false, &Error{Exit: ExitError, Code: "ambiguous", Err: &AmbiguousError{Prefix: s, IDs: hits}}
}
