package fakecloud

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/testkit/clock"
)

type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
	TokenType    string `json:"token_type"`
	Error        string `json:"error"`
}

// refresh posts a token request with no other header than the form's (and
// Basic auth when user is set), as an OAuth client does.
func refresh(t *testing.T, s *Server, form url.Values, user string) (int, tokenAnswer) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL()+"/v1/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, "")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var a tokenAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("answer %q: %v", b, err)
	}
	return resp.StatusCode, a
}

func form(grant, rt, client string) url.Values {
	v := url.Values{"grant_type": {grant}, "refresh_token": {rt}}
	if client != "" {
		v.Set("client_id", client)
	}
	return v
}

// get lists sessions with a bearer token and returns the status and body.
func get(t *testing.T, s *Server, bearer string) (int, string) {
	t.Helper()
	h := headers()
	h.Set("Authorization", "Bearer "+bearer)
	resp := do(t, h, "GET", s.URL()+"/v1/sessions", "", nil)
	return resp.StatusCode, resp.Header.Get("X-Test-Body")
}

func TestTheTokenEndpointRefreshes(t *testing.T) {
	s := Start(t, Options{Token: token, OrgUUID: org, RefreshToken: "rt-0", ClientID: "client-1", TokenLifetime: 2 * time.Hour})
	first := s.RefreshToken()
	var issued tokenAnswer
	tests := []struct {
		name   string
		form   func() url.Values
		user   string
		status int
		errKey string
	}{
		{"a refresh with the current refresh token issues new tokens", func() url.Values { return form("refresh_token", first, "client-1") }, "", 200, ""},
		{"the rotated refresh token no longer works", func() url.Values { return form("refresh_token", first, "client-1") }, "", 400, "invalid_grant"},
		{"a grant other than refresh_token is refused", func() url.Values { return form("password", s.RefreshToken(), "client-1") }, "", 400, "unsupported_grant_type"},
		{"a refresh without a client_id is refused", func() url.Values { return form("refresh_token", s.RefreshToken(), "") }, "", 400, "invalid_request"},
		{"a refresh for another client is refused", func() url.Values { return form("refresh_token", s.RefreshToken(), "client-2") }, "", 401, "invalid_client"},
		{"the client_id may come as the Basic user", func() url.Values { return form("refresh_token", s.RefreshToken(), "") }, "client-1", 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, a := refresh(t, s, tc.form(), tc.user)
			if status != tc.status || a.Error != tc.errKey {
				t.Fatalf("got %d %+v, want %d %q", status, a, tc.status, tc.errKey)
			}
			if status == 200 {
				if a.AccessToken == "" || a.RefreshToken == "" || a.RefreshToken == first || a.TokenType != "Bearer" || a.ExpiresIn != 7200 {
					t.Fatalf("answer %+v", a)
				}
				if a.RefreshToken != s.RefreshToken() {
					t.Fatalf("the fake says the refresh token is %q, the answer %q", s.RefreshToken(), a.RefreshToken)
				}
				issued = a
			}
		})
	}
	if s.Refreshes() != 2 {
		t.Fatalf("%d refreshes", s.Refreshes())
	}
	steps := []struct {
		name   string
		act    func()
		bearer func() string
		status int
		body   string
	}{
		{"an issued access token is accepted like the configured one", func() {}, func() string { return issued.AccessToken }, 200, ""},
		{"the configured token still works", func() {}, func() string { return token }, 200, ""},
		{"after ExpireTokens an issued token answers 401 expired", s.ExpireTokens, func() string { return issued.AccessToken }, 401, "OAuth token has expired"},
		{"without TokenExpires the configured token survives ExpireTokens", func() {}, func() string { return token }, 200, ""},
		{"a token issued after ExpireTokens works", func() {
			_, issued = refresh(t, s, form("refresh_token", s.RefreshToken(), "client-1"), "")
		}, func() string { return issued.AccessToken }, 200, ""},
		{"a made-up token is refused as invalid, not expired", func() {}, func() string { return "fake-at-made-up" }, 401, "invalid credentials"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.act()
			status, body := get(t, s, st.bearer())
			if status != st.status || !strings.Contains(body, st.body) {
				t.Fatalf("got %d %s, want %d %q", status, body, st.status, st.body)
			}
		})
	}
}

func TestTokenExpiry(t *testing.T) {
	t.Run("TokenExpires lets ExpireTokens expire the configured token", func(t *testing.T) {
		s := Start(t, Options{Token: token, OrgUUID: org, TokenExpires: true})
		if status, _ := get(t, s, token); status != 200 {
			t.Fatalf("before: %d", status)
		}
		s.ExpireTokens()
		if status, body := get(t, s, token); status != 401 || !strings.Contains(body, "expired") {
			t.Fatalf("after: %d %s", status, body)
		}
	})
	t.Run("an issued token stops working when its lifetime is up", func(t *testing.T) {
		clk := clock.NewFakeClock(time.Time{})
		s := Start(t, Options{OrgUUID: org, RefreshToken: "rt", Clock: clk, TokenLifetime: time.Minute})
		_, a := refresh(t, s, form("refresh_token", "rt", "c"), "")
		if a.ExpiresIn != 60 {
			t.Fatalf("expires_in %d", a.ExpiresIn)
		}
		clk.Advance(time.Minute - time.Second)
		if status, _ := get(t, s, a.AccessToken); status != 200 {
			t.Fatalf("within its lifetime: %d", status)
		}
		clk.Advance(time.Second)
		if status, body := get(t, s, a.AccessToken); status != 401 || !strings.Contains(body, "expired") {
			t.Fatalf("after its lifetime: %d %s", status, body)
		}
	})
	t.Run("without RefreshToken the endpoint does not exist", func(t *testing.T) {
		s := start(t)
		req, _ := http.NewRequest("POST", s.URL()+"/v1/oauth/token", strings.NewReader(form("refresh_token", "x", "c").Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}
