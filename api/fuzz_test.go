package api

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzRequestBodies: no body sent to the API yields a 5xx.
func FuzzRequestBodies(f *testing.F) {
	f.Add("POST", "/v1/messages", `{"to":"review","text":"hi"}`)
	f.Add("POST", "/v1/messages", `{"to":"work","text":"x","mode":"bypass","files":["/etc/hostname"]}`)
	f.Add("POST", "/v1/held/abc", `{"action":"deny","reason":"no"}`)
	f.Add("POST", "/v1/idle", `{"to":"[abcdef]"}`)
	f.Add("GET", "/v1/messages/x?wait=1&timeout=1ns", ``)
	h := newTestServer().Handler()
	f.Fuzz(func(t *testing.T, method, path, body string) {
		if method != "GET" && method != "POST" {
			return
		}
		if _, err := url.ParseRequestURI(path); err != nil || !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " #") || strings.HasPrefix(path, "/v1/events") {
			return // not a request line a client can send; the event stream never ends
		}
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, path, body, rec.Code, rec.Body.String())
		}
	})
}
