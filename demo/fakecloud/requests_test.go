package fakecloud

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/testkit/clock"
)

func TestTheRequestLog(t *testing.T) {
	clk := clock.NewFakeClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	s := Start(t, Options{Token: token, SessionKey: "sk-abc", OrgUUID: org, Clock: clk})
	id := s.CreateSession("log")
	h := headers()
	h.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	do(t, h, "GET", s.URL()+"/v1/sessions?limit=5", "", nil)
	cookie := headers()
	cookie.Del("Authorization")
	cookie.Set("Cookie", "sessionKey=sk-abc; other=visible")
	do(t, cookie, "GET", s.URL()+"/v1/sessions/"+id, "", nil)
	bad := headers()
	bad.Set("Authorization", "Bearer wrong-secret")
	do(t, bad, "GET", s.URL()+"/v1/sessions", "", nil)
	dial(t, s, id, true)
	openStream(t, s, id, "?from_sequence_num=0", nil, false)

	reqs := s.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests logged: %+v", len(reqs), reqs)
	}
	tests := []struct {
		name  string
		check func(rs []Request) error
	}{
		{"every request is logged in order with method, path and query", func(rs []Request) error {
			got := []string{}
			for _, r := range rs {
				got = append(got, r.Method+" "+r.Path+"?"+r.RawQuery)
			}
			want := []string{
				"GET /v1/sessions?limit=5", "GET /v1/sessions/" + id + "?", "GET /v1/sessions?",
				"GET /v1/sessions/ws/" + id + "/subscribe?organization_uuid=" + org + "&replay=true",
				"GET /v1/code/sessions/" + id + "/events/stream?from_sequence_num=0",
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("got %q, want %q", got, want)
			}
			return nil
		}},
		{"headers such as traceparent and anthropic-version are kept", func(rs []Request) error {
			if rs[0].Header.Get("Traceparent") == "" || rs[0].Header.Get("Anthropic-Version") != "2023-06-01" || rs[0].Header.Get("X-Organization-Uuid") != org {
				return fmt.Errorf("headers %v", rs[0].Header)
			}
			return nil
		}},
		{"a bearer token is redacted but its scheme is kept", func(rs []Request) error {
			for _, i := range []int{0, 2} {
				if got := rs[i].Header.Get("Authorization"); got != "Bearer [redacted]" {
					return fmt.Errorf("request %d: Authorization %q", i, got)
				}
			}
			return nil
		}},
		{"cookie values are redacted but their names are kept", func(rs []Request) error {
			if got := rs[1].Header.Get("Cookie"); got != "sessionKey=[redacted]; other=[redacted]" {
				return fmt.Errorf("Cookie %q", got)
			}
			return nil
		}},
		{"no secret appears anywhere in the log", func(rs []Request) error {
			all := fmt.Sprint(rs)
			for _, secret := range []string{token, "sk-abc", "wrong-secret"} {
				if strings.Contains(all, secret) {
					return fmt.Errorf("%q in %s", secret, all)
				}
			}
			return nil
		}},
		{"each request carries the time of the injected clock", func(rs []Request) error {
			for _, r := range rs {
				if !r.Time.Equal(clk.Now()) {
					return fmt.Errorf("time %v, want %v", r.Time, clk.Now())
				}
			}
			return nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.check(reqs); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTheRequestLogKeepsTheLast10000(t *testing.T) {
	s := Start(t, Options{})
	const n = requestLogSize + 25
	for i := range n {
		s.record(httptest.NewRequest("GET", fmt.Sprintf("/v1/sessions?i=%d", i), nil))
	}
	rs := s.Requests()
	if len(rs) != requestLogSize {
		t.Fatalf("kept %d", len(rs))
	}
	if rs[0].RawQuery != "i=25" || rs[len(rs)-1].RawQuery != fmt.Sprintf("i=%d", n-1) {
		t.Fatalf("kept %q .. %q", rs[0].RawQuery, rs[len(rs)-1].RawQuery)
	}
	// The log returns copies: changing one does not change the next answer.
	rs[0].Header.Set("X", "y")
	rs[0].Path = "/changed"
	if again := s.Requests(); again[0].Path == "/changed" || again[0].Header.Get("X") != "" {
		t.Fatal("the log handed out its own slice")
	}
}

func TestRedaction(t *testing.T) {
	tests := []struct {
		name, header, in, want string
	}{
		{"a bearer token keeps its scheme", "Authorization", "Bearer abc", "Bearer [redacted]"},
		{"a value without a scheme is redacted whole", "Authorization", "abc", "[redacted]"},
		{"every cookie value is redacted", "Cookie", "sessionKey=abc;b=c", "sessionKey=[redacted];b=[redacted]"},
		{"an API key header is redacted", "X-Api-Key", "sk-ant-api03-secret", "[redacted]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			h.Set(tc.header, tc.in)
			redactHeader(h)
			if got := h.Get(tc.header); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
