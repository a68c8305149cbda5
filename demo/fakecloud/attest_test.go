package fakecloud

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
)

// fileSigner writes a fresh Ed25519 seed to a 0600 file and loads it with the
// real ed25519-file signer, so the fake is checked against what clients use.
func fileSigner(t *testing.T, label string) (auth.Signer, ed25519.PublicKey) {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	copy(seed, label)
	path := filepath.Join(t.TempDir(), "device.key")
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	sg, err := auth.NewEd25519FileSigner(path)
	if err != nil {
		t.Fatal(err)
	}
	return sg, ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
}

// attach signs event (JCS of it as given) and returns it with the attestation.
func attach(t *testing.T, sg auth.Signer, event string) string {
	t.Helper()
	canon, err := sessionsapi.Canonicalize([]byte(event))
	if err != nil {
		t.Fatal(err)
	}
	a, err := sg.Sign(context.Background(), canon)
	if err != nil {
		t.Fatal(err)
	}
	ab, _ := json.Marshal(a)
	return strings.TrimSuffix(strings.TrimSpace(event), "}") + `,"client_attestation":` + string(ab) + `}`
}

func TestPostedEventsAreClassifiedByTheirAttestation(t *testing.T) {
	sg, pub := fileSigner(t, "device")
	other, otherPub := fileSigner(t, "another device")
	if pub.Equal(otherPub) {
		t.Fatal("the two keys are the same")
	}
	s := Start(t, Options{Token: token, OrgUUID: org, DeviceKey: pub})
	id := s.CreateSession("bound")
	const ev = `{"type":"user","uuid":"%s","message":{"role":"user","content":"hello <there> & é"}}`
	user := func(uuid string) string { return fmt.Sprintf(ev, uuid) }
	tests := []struct {
		name   string
		events []string
		status int
		want   []string // classifications added
	}{
		{"an event signed by the device key is attested", []string{attach(t, sg, user("a1"))}, 200, []string{"attested"}},
		{"an attested event re-serialised in transit still verifies",
			[]string{attach(t, sg, `{"message":{"content":"x","role":"user"},  "uuid":"a2","type":"user"}`)}, 200, []string{"attested"}},
		{"an event without an attestation is bound_unattested", []string{user("a3")}, 200, []string{"bound_unattested"}},
		{"an unsigned attestation of the same bytes is bound_unattested", []string{attach(t, auth.NewNoneSigner(), user("a4"))}, 200, []string{"bound_unattested"}},
		{"a batch is classified event by event in post order", []string{user("a5"), attach(t, sg, user("a6"))}, 200, []string{"bound_unattested", "attested"}},
		{"an unsigned attestation of other bytes is refused", []string{strings.Replace(attach(t, auth.NewNoneSigner(), user("b1")), "hello", "HELLO", 1)}, 400, nil},
		{"an event changed after signing is refused", []string{strings.Replace(attach(t, sg, user("b2")), "hello", "HELLO", 1)}, 400, nil},
		{"an event signed by another key is refused", []string{attach(t, other, user("b3"))}, 400, nil},
		{"an attestation that is not an object is refused", []string{`{"type":"user","uuid":"b4","client_attestation":7}`}, 400, nil},
		{"a batch with one bad attestation stores nothing", []string{user("b5"), attach(t, other, user("b6"))}, 400, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, posted := len(s.Classifications(id)), len(s.Posted(id))
			body := `{"events":[` + strings.Join(tc.events, ",") + `]}`
			resp := do(t, headers(), "POST", s.URL()+"/v1/code/sessions/"+id+"/events", body, nil)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, resp.Header.Get("X-Test-Body"))
			}
			if tc.status == 400 && !strings.Contains(resp.Header.Get("X-Test-Body"), "invalid client_attestation") {
				t.Fatalf("body %s", resp.Header.Get("X-Test-Body"))
			}
			got := s.Classifications(id)[before:]
			if fmt.Sprint(got) != fmt.Sprint(tc.want) && (len(got) > 0 || len(tc.want) > 0) {
				t.Fatalf("classified %v, want %v", got, tc.want)
			}
			if len(s.Posted(id))-posted != len(tc.want) {
				t.Fatalf("stored %d events, want %d", len(s.Posted(id))-posted, len(tc.want))
			}
		})
	}
}

func TestWithoutADeviceKeyEventsAreUnbound(t *testing.T) {
	s := start(t)
	id := s.CreateSession("unbound")
	body := `{"events":[{"type":"user","uuid":"u1"},{"type":"user","uuid":"u2","client_attestation":{"type":"nonsense"}}]}`
	if resp := do(t, headers(), "POST", s.URL()+"/v1/sessions/"+id+"/events", body, nil); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := s.Classifications(id); fmt.Sprint(got) != "[unbound unbound]" {
		t.Fatalf("classified %v", got)
	}
}
