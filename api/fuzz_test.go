package api

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/clock"
)

// FuzzRequestBodies: no body sent to the API yields a 5xx.
func FuzzRequestBodies(f *testing.F) {
	f.Add("POST", "/v1/messages", `{"to":"review","text":"hi"}`)
	f.Add("POST", "/v1/messages", `{"to":"work","text":"x","mode":"bypass","files":["/etc/hostname"]}`)
	f.Add("POST", "/v1/held/abc", `{"action":"deny","reason":"no"}`)
	f.Add("POST", "/v1/idle", `{"to":"[abcdef]"}`)
	f.Add("GET", "/v1/messages/x?wait=1&timeout=1ns", ``)
	f.Add("GET", "/v1/permissions?all=true", ``)
	f.Add("GET", "/v1/permissions/"+permID("bash"), ``)
	f.Add("POST", "/v1/permissions/"+permID("bash"), `{"behavior":"allow","updated_input":{"command":"ls"},"rules":[{"tool_name":"Bash","rule_content":"ls"}],"rule_destination":"session"}`)
	f.Add("POST", "/v1/permissions/"+permID("ask"), `{"behavior":"allow","answers":{"Which approach?":["Option A"],"Which features?":["Logging","Metrics"]}}`)
	f.Add("POST", "/v1/permissions/"+permID("ask"), `{"behavior":"deny","message":"no"}`)
	f.Add("POST", "/v1/control", `{"address":"bridge:session_01abc","kind":"set_permission_mode","mode":"plan"}`)
	f.Add("POST", "/v1/control", `{"address":"review","kind":"interrupt"}`)
	f.Add("GET", "/v1/resolve?address=fix-the-bug", ``)
	f.Add("GET", "/v1/outbox?all=true", ``)
	f.Add("GET", "/v1/outbox?all=perhaps", ``)
	f.Add("POST", "/v1/login", `{"token":"gw_00"}`)
	f.Add("POST", "/v1/login", `{"pairing":"abc","token":""}`)
	f.Add("POST", "/v1/pairings", `{"scopes":"read,send","ttl":"10m"}`)
	f.Add("POST", "/v1/pairings", `{"ttl":"-1h"}`)
	f.Add("GET", "/v1/actions/x.y", ``)
	// A running router with pending prompts on a leg that never fails, so
	// any 5xx is the API's fault.
	srv, _ := newPermissionServer(f)
	h := srv.Handler()
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

// FuzzParseScopes: what parses prints back to a set that parses the same.
func FuzzParseScopes(f *testing.F) {
	for _, s := range []string{"read", "read,send,approve", " approve , read", "read,read", "", "admin", "read,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := ParseScopes(s)
		if err != nil {
			return
		}
		again, err := ParseScopes(sc.String())
		if err != nil || again != sc {
			t.Fatalf("%q parsed to %v, which reparses to %v, %v", s, sc, again, err)
		}
	})
}

// FuzzTCPHeaders: no Authorization, Origin or Host header gets past the
// token check on a protected path or yields a 5xx.
func FuzzTCPHeaders(f *testing.F) {
	f.Add("Bearer tok", "https://ui.example", "127.0.0.1:7777", "GET")
	f.Add("Bearer ", "", "localhost:7777", "OPTIONS")
	f.Add("bearer tok", "null", "127.0.0.1:7777", "POST")
	f.Add("Bearer gwt_00", "https://ui.example", "[::1]:7777", "OPTIONS")
	srv := newTestServer()
	srv.cfg.CORSOrigin = "https://ui.example"
	srv.cfg.RateLimit = clock.Bucket{Rate: -1}
	srv.limit = newLimiter(srv.cfg.RateLimit, clock.Real{})
	h := srv.TCPHandler("127.0.0.1:7777")
	f.Fuzz(func(t *testing.T, auth, origin, host, method string) {
		req := httptest.NewRequest("GET", "/v1/sessions", nil)
		req.Method, req.Host = method, host
		req.Header.Set("Authorization", auth)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "GET")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
		if rec.Code == 200 && auth != "Bearer tok" {
			t.Fatalf("authorised with %q", auth)
		}
	})
}
