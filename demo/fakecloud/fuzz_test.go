package fakecloud

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
	"github.com/sessiongateway/gateway/leg/remote/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// FuzzPostEvents feeds arbitrary bodies to POST events: the fake must answer
// 200 or 400, never panic, and store the events of a 200 (or count them as
// duplicates of stored ones) and nothing of a 400.
func FuzzPostEvents(f *testing.F) {
	f.Add(`{"events":[{"type":"user","message":{"role":"user","content":"Hello"}}]}`)
	f.Add(`{"events":[{"type":"control_response","response":{"subtype":"success","request_id":"r","response":{"behavior":"allow"}}}]}`)
	f.Add(`{"events":[{"type":"control_request","request_id":"i","request":{"subtype":"interrupt"}}]}`)
	f.Add(`{"events":[{"type":"x","uuid":7}]}`)
	f.Add(`{"events":[]}`)
	f.Add(`{"events":[{"type":"user","message":{"role":"user","content":"see"},"file_attachments":[{"file_name":"a.txt","file_type":"text/plain","file_content":"aGk="}]}]}`)
	f.Add(`{"events":[{"type":"user","message":{"role":"user","content":"see"},"file_attachments":[{"file_name":"a.txt","file_type":"text/plain","file_content":"not base64!"}]}]}`)
	f.Add(`{"events":[{"type":"user","file_attachments":[{"file_name":""}]}]}`)
	f.Add(`[`)
	f.Add(`{"events":[{"type":"user","uuid":"same"},{"type":"user","uuid":"same"}]}`)
	s, err := Listen(Options{RequiredHeaders: []string{}})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	h := s.routes()
	id := s.CreateSession("fuzz")
	f.Fuzz(func(t *testing.T, body string) {
		before, dups := len(s.Posted(id)), s.Duplicates(id)
		req := httptest.NewRequest("POST", "/v1/sessions/"+id+"/events", strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		after := len(s.Posted(id))
		switch rec.Code {
		case http.StatusOK:
			if after == before && s.Duplicates(id) == dups {
				t.Fatalf("200 but nothing stored for %q", body)
			}
		case http.StatusBadRequest:
			if after != before || s.Duplicates(id) != dups {
				t.Fatalf("400 but %d events stored for %q", after-before, body)
			}
		default:
			t.Fatalf("status %d for %q", rec.Code, body)
		}
	})
}

// FuzzCodeEventsQuery feeds arbitrary queries to the v2 events list: 200 or
// 400 only, and a 200 page holds consecutive sequence numbers after the
// resume point, no more than the limit, with has_more true exactly when
// events remain.
func FuzzCodeEventsQuery(f *testing.F) {
	for _, q := range []string{"", "from_sequence_num=2", "from_sequence_num=2&limit=2", "limit=0",
		"from_sequence_num=-1", "from_sequence_num=18446744073709551615", "from_sequence_num=99&limit=1",
		"limit=%zz", "from_sequence_num=1&from_sequence_num=3", "limit=9999999999999999999999"} {
		f.Add(q)
	}
	s, err := Listen(Options{RequiredHeaders: []string{}})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	id := s.CreateSession("fuzz")
	const stored = 5
	for range stored {
		if err := s.Emit(id, `{"type":"result","subtype":"success"}`); err != nil {
			f.Fatal(err)
		}
	}
	h := s.routes()
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest("GET", "/v1/code/sessions/"+id+"/events", nil)
		req.URL.RawQuery = query
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusBadRequest {
			return
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d for %q", rec.Code, query)
		}
		var p struct {
			Data    []json.RawMessage
			HasMore bool `json:"has_more"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatalf("page %q: %v", rec.Body.Bytes(), err)
		}
		q := req.URL.Query()
		from, _ := strconv.ParseUint(q.Get("from_sequence_num"), 10, 64)
		limit, err := strconv.Atoi(q.Get("limit"))
		if err != nil {
			limit = defaultLimit
		}
		if len(p.Data) > limit {
			t.Fatalf("%d events over limit %d for %q", len(p.Data), limit, query)
		}
		last := min(from, stored)
		for _, raw := range p.Data {
			v, err := wire.DecodeV2(wire.Event{Data: string(raw)})
			if err != nil || v.SequenceNum != last+1 {
				t.Fatalf("event %s (%v) after %d for %q", raw, err, last, query)
			}
			last = v.SequenceNum
		}
		if p.HasMore != (last < stored) {
			t.Fatalf("has_more %v with %d of %d sent for %q", p.HasMore, last, stored, query)
		}
	})
}

// FuzzOAuthToken feeds arbitrary forms to the token endpoint: 200, 400 or
// 401 only, and a 200 rotates the refresh token and issues an access token
// the fake then accepts.
func FuzzOAuthToken(f *testing.F) {
	f.Add("grant_type=refresh_token&refresh_token=rt-0&client_id=c", "")
	f.Add("grant_type=refresh_token&refresh_token=rt-0", "c")
	f.Add("grant_type=password&username=a", "")
	f.Add("grant_type=refresh_token&refresh_token=%zz", "")
	f.Add("", "")
	f.Add(strings.Repeat("a=b&", 1000), "")
	s, err := Listen(Options{RequiredHeaders: []string{}, RefreshToken: "rt-0"})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	h := s.routes()
	f.Fuzz(func(t *testing.T, body, user string) {
		before := s.RefreshToken()
		req := httptest.NewRequest("POST", "/v1/oauth/token", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if user != "" {
			req.SetBasicAuth(user, "")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusBadRequest, http.StatusUnauthorized:
			if s.RefreshToken() != before {
				t.Fatalf("refused %q but rotated the refresh token", body)
			}
			return
		case http.StatusOK:
		default:
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		var a struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || a.RefreshToken == before || a.RefreshToken != s.RefreshToken() {
			t.Fatalf("answer %q (%v) for %q", rec.Body.Bytes(), err, body)
		}
		if s.checkToken(a.AccessToken) != tokenValid {
			t.Fatalf("issued token %q is not accepted", a.AccessToken)
		}
	})
}

// FuzzPostAttested feeds arbitrary events to a session bound to a device
// key: 200 or 400 only; a 200 classes each new event once, a 400 stores and
// classes nothing.
func FuzzPostAttested(f *testing.F) {
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	ev := `{"type":"user","uuid":"u","message":{"role":"user","content":"hi"}}`
	canon, err := sessionsapi.Canonicalize([]byte(ev))
	if err != nil {
		f.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	att, _ := json.Marshal(auth.Attestation{Type: auth.ClientEventV1, Canonicalization: auth.CanonicalizationJCS,
		Algorithm: auth.AlgEd25519, KeyID: auth.KeyID(priv.Public().(ed25519.PublicKey)),
		PayloadSHA256: hex.EncodeToString(sum[:]), Signature: ed25519.Sign(priv, canon)})
	f.Add(strings.TrimSuffix(ev, "}") + `,"client_attestation":` + string(att) + `}`)
	f.Add(ev)
	f.Add(`{"type":"user","client_attestation":null}`)
	f.Add(`{"type":"user","client_attestation":{"type":"anthropic.ccr.client_event.v1","algorithm":"none"}}`)
	f.Add(`{"type":"user","client_attestation":"x"}`)
	f.Add(`{"type":"user","message":{"content":"\ud800"},"client_attestation":{}}`)
	s, err := Listen(Options{RequiredHeaders: []string{}, DeviceKey: priv.Public().(ed25519.PublicKey)})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	h := s.routes()
	id := s.CreateSession("fuzz")
	f.Fuzz(func(t *testing.T, event string) {
		posted, classes := len(s.Posted(id)), len(s.Classifications(id))
		req := httptest.NewRequest("POST", "/v1/code/sessions/"+id+"/events", strings.NewReader(`{"events":[`+event+`]}`))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		grew, classed := len(s.Posted(id))-posted, len(s.Classifications(id))-classes
		switch rec.Code {
		case http.StatusOK:
			if grew != classed || grew > 1 {
				t.Fatalf("200: %d stored, %d classed for %q", grew, classed, event)
			}
		case http.StatusBadRequest:
			if grew != 0 || classed != 0 {
				t.Fatalf("400 but %d stored, %d classed for %q", grew, classed, event)
			}
		default:
			t.Fatalf("status %d for %q", rec.Code, event)
		}
	})
}
