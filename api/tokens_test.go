package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/testkit/clock"
)

func TestLastUseIsWrittenAtMostOnceAMinute(t *testing.T) {
	sd := filepath.Join(t.TempDir(), "state")
	clk := clock.NewFakeClock(time.Unix(2e9, 0))
	store := NewTokenFile(sd, clk)
	tok, rec, err := store.Add("ci", AllScopes)
	if err != nil {
		t.Fatal(err)
	}
	lastUse := func() time.Time {
		recs, err := store.List()
		if err != nil || len(recs) != 1 || recs[0].LastUsed == nil {
			t.Fatalf("records %+v, %v", recs, err)
		}
		return *recs[0].LastUsed
	}
	store.Verify(string(tok))
	first := lastUse()
	clk.Advance(30 * time.Second)
	store.Verify(string(tok))
	if got := lastUse(); !got.Equal(first) {
		t.Fatalf("written again after 30s: %v", got)
	}
	clk.Advance(time.Minute)
	store.Verify(string(tok))
	if got := lastUse(); !got.Equal(clk.Now().UTC()) {
		t.Fatalf("last use %v, want %v (record %s)", got, clk.Now(), rec.ID)
	}
}

// FuzzAPITokenFile: whatever another process leaves in api-tokens.json,
// Verify does not crash, and grants only a token whose hash is there with
// valid scopes.
func FuzzAPITokenFile(f *testing.F) {
	tok := TokenPrefix + strings.Repeat("ab", 32)
	good, _ := json.Marshal(tokensFile{SchemaVersion: 1, Tokens: []TokenRecord{{ID: "t_01020304", Label: "x", Scopes: "read", TokenHash: hashToken(tok)}}})
	f.Add(good)
	f.Add([]byte(`{"schemaVersion":1,"tokens":[{"id":"t_1","scopes":"admin","tokenHash":"` + hashToken(tok) + `"}]}`))
	f.Add([]byte(`{"schemaVersion":2,"tokens":null}`))
	f.Add([]byte(`[]`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		store := NewTokenFile(dir, nil)
		if err := os.WriteFile(store.path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		g, ok := store.Verify(tok)
		if !ok {
			return
		}
		recs, err := store.List()
		if err != nil {
			t.Fatalf("granted %+v from a file that does not read: %v", g, err)
		}
		found := false
		for _, r := range recs {
			found = found || (r.TokenHash == hashToken(tok) && r.ID == g.ID)
		}
		if !found || g.Scopes == 0 {
			t.Fatalf("granted %+v without a matching record", g)
		}
	})
}
