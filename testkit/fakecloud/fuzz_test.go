package fakecloud

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// FuzzPostEvents feeds arbitrary bodies to POST events: the fake must answer
// 200 or 400, never panic, and store exactly the events of a 200.
func FuzzPostEvents(f *testing.F) {
	f.Add(`{"events":[{"type":"user","message":{"role":"user","content":"Hello"}}]}`)
	f.Add(`{"events":[{"type":"control_response","response":{"subtype":"success","request_id":"r","response":{"behavior":"allow"}}}]}`)
	f.Add(`{"events":[{"type":"control_request","request_id":"i","request":{"subtype":"interrupt"}}]}`)
	f.Add(`{"events":[{"type":"x","uuid":7}]}`)
	f.Add(`{"events":[]}`)
	f.Add(`[`)
	s, err := Listen(Options{RequiredHeaders: []string{}})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	h := s.routes()
	id := s.CreateSession("fuzz")
	f.Fuzz(func(t *testing.T, body string) {
		before := len(s.Posted(id))
		req := httptest.NewRequest("POST", "/v1/sessions/"+id+"/events", strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		after := len(s.Posted(id))
		switch rec.Code {
		case http.StatusOK:
			if after == before {
				t.Fatalf("200 but nothing stored for %q", body)
			}
		case http.StatusBadRequest:
			if after != before {
				t.Fatalf("400 but %d events stored for %q", after-before, body)
			}
		default:
			t.Fatalf("status %d for %q", rec.Code, body)
		}
	})
}
