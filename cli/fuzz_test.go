package cli

import (
	"strings"
	"testing"
)

// FuzzResolve: whatever is typed, Resolve answers one of the ids (one that
// starts with what was typed), none, or an ambiguity naming several.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"3f2a", "", "P", "3f2a9c1e-aaaa", "\x00", "3f2"} {
		f.Add(s)
	}
	ids := []string{"3f2a9c1e-aaaa", "3f2b0000-bbbb", "pe1fd19", "PE1FD20"}
	f.Fuzz(func(t *testing.T, typed string) {
		id, ok, err := Resolve(typed, ids)
		switch {
		case ok && (err != nil || !strings.HasPrefix(strings.ToLower(id), strings.ToLower(strings.TrimSpace(typed)))):
			t.Fatalf("Resolve(%q) = %q, %v", typed, id, err)
		case !ok && id != "":
			t.Fatalf("Resolve(%q) = %q without ok", typed, id)
		}
		_ = Suggest(typed, ids)
	})
}
