package hosted

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzStore: whatever hosted.json holds, opening it never panics, and
// every record it keeps names a session of a known agent.
func FuzzStore(f *testing.F) {
	f.Add([]byte(`[{"name":"api","agent":"claude","cwd":"/w","session_id":"5c0e","created":"2026-12-08T00:00:00Z","turns":[{"uuid":"u","msg_id":"m","text":"hi"}]}]`))
	f.Add([]byte(`[null,{"name":"","agent":"claude"},{"name":"x","agent":"gpt"}]`))
	f.Add([]byte(`{"not":"a list"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "hosted.json")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := openStore(p)
		if err != nil {
			return
		}
		names := map[string]bool{}
		for _, r := range s.recs {
			if _, ok := agents[r.Agent]; !ok || !validName.MatchString(r.Name) || r.Cwd == "" || names[r.Name] {
				t.Fatalf("kept a record of no session: %+v", r)
			}
			names[r.Name] = true
		}
	})
}
