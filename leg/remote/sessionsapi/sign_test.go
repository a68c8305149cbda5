package sessionsapi_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
)

// fileSigner writes an Ed25519 seed to a 0600 file and loads it the way a
// user's configuration would.
func fileSigner(t *testing.T) (auth.Signer, ed25519.PublicKey) {
	t.Helper()
	seed := bytes.Repeat([]byte{42}, ed25519.SeedSize)
	path := filepath.Join(t.TempDir(), "device.key")
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := auth.NewEd25519FileSigner(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
}

// stripAndCanonicalize is what a verifier does, written out here rather than
// through sessionsapi.VerifyEvent so that the test checks the placement.
func stripAndCanonicalize(t *testing.T, event json.RawMessage) (auth.Attestation, []byte, bool) {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(event, &obj); err != nil {
		t.Fatal(err)
	}
	raw, ok := obj["client_attestation"]
	var a auth.Attestation
	if ok {
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		delete(obj, "client_attestation")
	}
	rest, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := sessionsapi.Canonicalize(rest)
	if err != nil {
		t.Fatal(err)
	}
	return a, canonical, ok
}

func TestSigning(t *testing.T) {
	ctx := context.Background()
	event := json.RawMessage(`{"type":"user","message":{"role":"user","content":"<b>signed</b> & \u00e9"},"parent_tool_use_id":null,"n":1.50}`)

	t.Run("an ed25519-file signed post verifies after the field is stripped", func(t *testing.T) {
		signer, pub := fileSigner(t)
		e := setup(t, fakecloud.Options{DeviceKey: pub}, sessionsapi.Options{Signer: signer})
		id := e.srv.CreateSession("signed")
		if _, err := e.c.PostEvents(ctx, id, event); err != nil {
			t.Fatal(err)
		}
		sent := sentEvents(t, e.trip.sent()[0])[0]
		a, canonical, ok := stripAndCanonicalize(t, sent)
		if !ok {
			t.Fatalf("no client_attestation in %s", sent)
		}
		if err := auth.Verify(a, canonical, pub); err != nil {
			t.Fatalf("the attestation does not verify: %v", err)
		}
		if !bytes.Contains(canonical, []byte(`"uuid":"`)) {
			t.Fatal("the uuid is not covered by the signature")
		}
		if err := sessionsapi.VerifyEvent(sent, pub); err != nil {
			t.Fatalf("VerifyEvent: %v", err)
		}
		if got := e.srv.Classifications(id); len(got) != 1 || got[0] != "attested" {
			t.Fatalf("the fake classed it %v", got)
		}
		if !strings.Contains(string(sent), `"<b>signed</b> & \u00e9"`) || !strings.Contains(string(sent), `"n":1.50`) {
			t.Fatalf("the event's strings were re-escaped: %s", sent)
		}
	})
	t.Run("a signed post to a code session verifies too", func(t *testing.T) {
		signer, pub := fileSigner(t)
		e := setup(t, fakecloud.Options{DeviceKey: pub}, sessionsapi.Options{Signer: signer})
		id := e.srv.CreateSession("signed v2")
		if _, err := e.c.PostCodeEvents(ctx, id, event); err != nil {
			t.Fatal(err)
		}
		if err := sessionsapi.VerifyEvent(sentEvents(t, e.trip.sent()[0])[0], pub); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a create's initial events are signed", func(t *testing.T) {
		signer, pub := fileSigner(t)
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{Signer: signer})
		if _, err := e.c.CreateSession(ctx, sessionsapi.CreateSessionRequest{Title: "s", Events: []json.RawMessage{event}}); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Events []struct {
				Type string          `json:"type"`
				Data json.RawMessage `json:"data"`
			} `json:"events"`
		}
		if err := json.Unmarshal([]byte(e.trip.sent()[0]), &body); err != nil || len(body.Events) != 1 || body.Events[0].Type != "event" {
			t.Fatalf("create body %s", e.trip.sent()[0])
		}
		if err := sessionsapi.VerifyEvent(body.Events[0].Data, pub); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("with the none signer nothing is attached", func(t *testing.T) {
		_, pub := fileSigner(t)
		e := setup(t, fakecloud.Options{DeviceKey: pub}, sessionsapi.Options{})
		id := e.srv.CreateSession("unsigned")
		if _, err := e.c.PostEvents(ctx, id, event); err != nil {
			t.Fatal(err)
		}
		sent := sentEvents(t, e.trip.sent()[0])[0]
		if _, _, ok := stripAndCanonicalize(t, sent); ok {
			t.Fatalf("an attestation was attached: %s", sent)
		}
		if err := sessionsapi.VerifyEvent(sent, pub); !errors.Is(err, sessionsapi.ErrEventUnsigned) {
			t.Fatalf("VerifyEvent = %v", err)
		}
		if got := e.srv.Classifications(id); len(got) != 1 || got[0] != "bound_unattested" {
			t.Fatalf("the fake classed it %v", got)
		}
	})
	t.Run("a changed event no longer verifies", func(t *testing.T) {
		signer, pub := fileSigner(t)
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{Signer: signer})
		id := e.srv.CreateSession("tamper")
		if _, err := e.c.PostEvents(ctx, id, event); err != nil {
			t.Fatal(err)
		}
		sent := sentEvents(t, e.trip.sent()[0])[0]
		tampered := bytes.Replace(sent, []byte("signed</b>"), []byte("signeD</b>"), 1)
		if err := sessionsapi.VerifyEvent(tampered, pub); !errors.Is(err, auth.ErrDigestMismatch) {
			t.Fatalf("VerifyEvent of a changed event = %v", err)
		}
	})
}

// failingSigner stands for a device that will not sign.
type failingSigner struct{}

func (failingSigner) Sign(context.Context, []byte) (auth.Attestation, error) {
	return auth.Attestation{}, errors.New("device locked")
}

func TestRefusedEventsStopThePost(t *testing.T) {
	ctx := context.Background()
	good := json.RawMessage(`{"type":"user","message":{"role":"user","content":"fine"}}`)
	tests := []struct {
		name   string
		event  string
		signer auth.Signer
		want   error
	}{
		{"a duplicate name", `{"type":"user","type":"assistant"}`, nil, sessionsapi.ErrDuplicateKey},
		{"invalid UTF-8", "{\"type\":\"user\",\"x\":\"\xff\"}", nil, sessionsapi.ErrInvalidUTF8},
		{"a lone surrogate", `{"type":"user","x":"\udc00"}`, nil, sessionsapi.ErrBadSurrogate},
		{"a reversed surrogate pair", `{"type":"user","x":"\udc00\ud800"}`, nil, sessionsapi.ErrBadSurrogate},
		{"nesting beyond the cap", `{"type":"user","x":` + strings.Repeat("[", sessionsapi.MaxDepth+1) + strings.Repeat("]", sessionsapi.MaxDepth+1) + `}`, nil, sessionsapi.ErrTooDeep},
		{"broken JSON", `{"type":`, nil, sessionsapi.ErrInvalidJSON},
		{"an array", `[{"type":"user"}]`, nil, sessionsapi.ErrInvalidEvent},
		{"null", `null`, nil, sessionsapi.ErrInvalidEvent},
		{"a uuid that is not a string", `{"type":"user","uuid":7}`, nil, sessionsapi.ErrInvalidEvent},
		{"an attestation already there", `{"type":"user","client_attestation":{}}`, nil, sessionsapi.ErrInvalidEvent},
		{"a signer that fails", string(good), failingSigner{}, nil},
	}
	for _, tt := range tests {
		for _, how := range []string{"PostEvents", "PostCodeEvents", "CreateSession"} {
			t.Run(tt.name+" stops "+how+" before anything is sent", func(t *testing.T) {
				e := setup(t, fakecloud.Options{}, sessionsapi.Options{Signer: tt.signer})
				id := e.srv.CreateSession("refused")
				before := len(e.srv.Requests())
				var err error
				events := []json.RawMessage{good, json.RawMessage(tt.event)}
				switch how {
				case "PostEvents":
					_, err = e.c.PostEvents(ctx, id, events...)
				case "PostCodeEvents":
					_, err = e.c.PostCodeEvents(ctx, id, events...)
				default:
					_, err = e.c.CreateSession(ctx, sessionsapi.CreateSessionRequest{Events: events})
				}
				var ee *sessionsapi.EventError
				if !errors.As(err, &ee) || ee.Op != how {
					t.Fatalf("got %v, want an EventError from %s", err, how)
				}
				if tt.signer == nil && ee.Index != 1 {
					t.Fatalf("event %d blamed, want 1", ee.Index)
				}
				if tt.want != nil {
					wantErr(t, err, tt.want)
				}
				if !strings.Contains(err.Error(), "nothing was sent") {
					t.Fatalf("error %q does not say nothing was sent", err)
				}
				if n := len(e.srv.Requests()) - before; n != 0 {
					t.Fatalf("%d requests were sent", n)
				}
			})
		}
	}
}
