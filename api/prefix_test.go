package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/clock"
)

func TestAnAPIPrefixServesEverythingUnderItAndNothingElse(t *testing.T) {
	console := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("console at " + r.URL.Path)) })
	srv := NewServer(Config{Router: newTestServer().cfg.Router, Token: "tok", Prefix: "/gw", Console: console, RateLimit: clock.Bucket{Rate: -1}})
	h := srv.TCPHandler(testHost)
	tests := []struct {
		name, path, token string
		code              int
		body              string
	}{
		{"a probe under the prefix", "/gw/healthz", "", http.StatusOK, ""},
		{"a route under the prefix", "/gw/v1/sessions", "tok", http.StatusOK, ""},
		{"the console under the prefix", "/gw/", "", http.StatusOK, "console at /"},
		{"the prefix alone is sent on to the console", "/gw", "", http.StatusMovedPermanently, ""},
		{"a route at the root", "/v1/sessions", "tok", http.StatusNotFound, "/gw/"},
		{"a probe at the root", "/healthz", "", http.StatusNotFound, ""},
		{"a path that only starts like the prefix", "/gwx/healthz", "", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := tcpDo(h, "GET", tt.path, tt.token, "")
			if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.body) {
				t.Fatalf("GET %s: %d %s", tt.path, rec.Code, rec.Body.String())
			}
		})
	}
	rec := tcpDo(h, "POST", "/gw/v1/login", "", `{"token":"tok"}`, "Content-Type", "application/json")
	if cs := rec.Result().Cookies(); rec.Code != http.StatusCreated || len(cs) != 1 || cs[0].Path != "/gw/" {
		t.Fatalf("login under the prefix: %d %v", rec.Code, cs)
	}
	if u := srv.ConsoleURL(); u != "http://"+testHost+"/gw/" {
		t.Fatalf("the pairing links point at %s", u)
	}
}

func TestCheckPrefix(t *testing.T) {
	for p, ok := range map[string]bool{"": true, "/gw": true, "/a/b-c_d.e~": true,
		"gw": false, "/gw/": false, "/": false, "/a//b": false, "/a/../b": false, "/a b": false, "/%2e": false} {
		if err := CheckPrefix(p); (err == nil) != ok {
			t.Errorf("CheckPrefix(%q) = %v", p, err)
		}
	}
}
