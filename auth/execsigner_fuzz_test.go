package auth

import (
	"encoding/json"
	"testing"
)

// FuzzParseExecOutput feeds the parser of a signer program's stdout: it must
// not panic, and what it accepts must attest these bytes and survive a round
// trip through its own JSON.
func FuzzParseExecOutput(f *testing.F) {
	canonical := []byte(`{"a":1}`)
	for _, s := range []string{
		`{"algorithm":"ed25519","keyId":"ab","signature":"AQID"}`,
		`{"algorithm":"none"}`,
		`{"type":"anthropic.ccr.client_event.v1","canonicalization":"claude-code-jcs@1","algorithm":"none","payloadSha256":"015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"}`,
		`{"algorithm":"ed25519","sig":"AQID"}`, `{} {}`, `null`, `{"signature":"!!"}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		a, err := parseExecOutput(out, canonical)
		if err != nil {
			return
		}
		if a.Type != ClientEventV1 || a.Canonicalization != CanonicalizationJCS || a.PayloadSHA256 != digest(canonical) || a.Algorithm == "" {
			t.Fatalf("accepted %q as %+v", out, a)
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseExecOutput(b, canonical)
		if err != nil || !equalAttestation(a, again) {
			t.Fatalf("round trip of %s: %+v, %v", b, again, err)
		}
	})
}
