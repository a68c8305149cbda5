package api

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
)

// browser is a signed-in browser: its cookie and CSRF token.
type browser struct {
	cookie *http.Cookie
	csrf   string
}

// do sends a request as the browser would from the console's own page:
// cookie, and the CSRF token on a state change unless csrf is false.
func (b browser) do(h http.Handler, method, path, body string, csrf bool, hdr ...string) *httptest.ResponseRecorder {
	if b.cookie != nil {
		hdr = append(hdr, "Cookie", b.cookie.Name+"="+b.cookie.Value)
	}
	if csrf {
		hdr = append(hdr, CSRFHeader, b.csrf)
	}
	return tcpDo(h, method, path, "", body, hdr...)
}

func signIn(t *testing.T, h http.Handler, body string) browser {
	t.Helper()
	rec := tcpDo(h, "POST", "/v1/login", "", body, "Content-Type", "application/json")
	if rec.Code != http.StatusCreated {
		t.Fatalf("login %s: %d %s", body, rec.Code, rec.Body.String())
	}
	var info LoginInfo
	if err := json.Unmarshal(rec.Body.Bytes(), &info); err != nil || info.CSRFToken == "" {
		t.Fatalf("login answered %s", rec.Body.String())
	}
	cs := rec.Result().Cookies()
	if len(cs) != 1 || cs[0].Name != SessionCookie {
		t.Fatalf("login set cookies %v", cs)
	}
	return browser{cookie: cs[0], csrf: info.CSRFToken}
}

func pairCode(t *testing.T, srv *Server, scopes, ttl string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	body, _ := json.Marshal(PairBody{Scopes: scopes, TTL: ttl})
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/pairings", strings.NewReader(string(body))))
	var p Pairing
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &p) != nil {
		t.Fatalf("pair: %d %s", rec.Code, rec.Body.String())
	}
	if !strings.HasSuffix(p.URL, "/#pair="+p.Code) {
		t.Fatalf("pairing URL %q does not carry its code in the fragment", p.URL)
	}
	return p.Code
}

func TestABrowserSessionIsGuardedLikeAToken(t *testing.T) {
	srv, _ := newPermissionServer(t)
	srv.cfg.Tokens = testTokens
	h := srv.TCPHandler(testHost)
	ids := []string{}
	for _, p := range srv.cfg.Router.Permissions() {
		ids = append(ids, p.ID)
	}
	deny := `{"behavior":"deny","message":"no"}`
	approver := signIn(t, h, `{"token":"approver"}`)

	t.Run("the cookie is HttpOnly and SameSite=Strict, Secure only over TLS", func(t *testing.T) {
		c := approver.cookie
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure {
			t.Fatalf("cookie %+v", c)
		}
		req := httptest.NewRequest("POST", "/v1/login", strings.NewReader(`{"token":"reader"}`))
		req.Host, req.TLS = testHost, &tls.ConnectionState{}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if cs := rec.Result().Cookies(); rec.Code != 201 || len(cs) != 1 || !cs[0].Secure {
			t.Fatalf("over TLS: %d %v", rec.Code, cs)
		}
	})
	t.Run("no cookie, no state change", func(t *testing.T) {
		if rec := (browser{}).do(h, "POST", "/v1/permissions/"+ids[0], deny, false); rec.Code != http.StatusUnauthorized {
			t.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
		if rec := (browser{cookie: &http.Cookie{Name: SessionCookie, Value: strings.Repeat("0", 64)}}).do(h, "POST", "/v1/held/x", `{"action":"release"}`, false); rec.Code != http.StatusUnauthorized {
			t.Fatalf("a forged cookie: %d %s", rec.Code, rec.Body.String())
		}
	})
	t.Run("a cross-site POST without the CSRF token is refused", func(t *testing.T) {
		rec := approver.do(h, "POST", "/v1/permissions/"+ids[0], deny, false, "Content-Type", "application/json")
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), CSRFHeader) {
			t.Fatalf("without the token: %d %s", rec.Code, rec.Body.String())
		}
		rec = approver.do(h, "POST", "/v1/permissions/"+ids[0], deny, true, "Origin", "https://evil.example")
		if rec.Code != http.StatusForbidden {
			t.Fatalf("from another origin, token and all: %d %s", rec.Code, rec.Body.String())
		}
		bad := approver
		bad.csrf = strings.Repeat("a", 64)
		if rec := bad.do(h, "POST", "/v1/permissions/"+ids[0], deny, true); rec.Code != http.StatusForbidden {
			t.Fatalf("a wrong token: %d", rec.Code)
		}
		if p, _ := srv.cfg.Router.Permission(ids[0]); p.State != "pending" {
			t.Fatalf("a refused request answered the prompt: %+v", p)
		}
	})
	t.Run("with its CSRF token the page answers", func(t *testing.T) {
		rec := approver.do(h, "POST", "/v1/permissions/"+ids[0], deny, true, "Origin", "http://"+testHost)
		if rec.Code != http.StatusOK {
			t.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
		rec = approver.do(h, "GET", "/v1/login", "", false)
		var info LoginInfo
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &info) != nil || info.CSRFToken != approver.csrf || info.Scopes != "read,approve" {
			t.Fatalf("whoami: %d %s", rec.Code, rec.Body.String())
		}
	})
	t.Run("a read-only sign-in shows but cannot answer", func(t *testing.T) {
		reader := signIn(t, h, `{"pairing":"`+pairCode(t, srv, "", "")+`"}`)
		if rec := reader.do(h, "GET", "/v1/permissions", "", false); rec.Code != 200 || !strings.Contains(rec.Body.String(), ids[1]) {
			t.Fatalf("list: %d %s", rec.Code, rec.Body.String())
		}
		rec := reader.do(h, "POST", "/v1/permissions/"+ids[1], deny, true)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `"missing_scope":"approve"`) {
			t.Fatalf("answer: %d %s", rec.Code, rec.Body.String())
		}
	})
	t.Run("logging out ends the session", func(t *testing.T) {
		b := signIn(t, h, `{"token":"approver"}`)
		if rec := b.do(h, "POST", "/v1/logout", "", true); rec.Code != http.StatusNoContent {
			t.Fatalf("logout: %d %s", rec.Code, rec.Body.String())
		}
		if rec := b.do(h, "GET", "/v1/permissions", "", false); rec.Code != http.StatusUnauthorized {
			t.Fatalf("after logout: %d", rec.Code)
		}
	})
	t.Run("a removed token signs its browsers out", func(t *testing.T) {
		toks := memTokens{"temp": {ID: "t_tmp", Label: "temp", Scopes: AllScopes}}
		srv.cfg.Tokens = toks
		b := signIn(t, h, `{"token":"temp"}`)
		delete(toks, "temp")
		if rec := b.do(h, "GET", "/v1/permissions", "", false); rec.Code != http.StatusUnauthorized {
			t.Fatalf("after removal: %d", rec.Code)
		}
	})
	t.Run("a wrong token signs nothing in", func(t *testing.T) {
		rec := tcpDo(h, "POST", "/v1/login", "", `{"token":"nope"}`)
		if rec.Code != http.StatusUnauthorized || len(rec.Result().Cookies()) != 0 {
			t.Fatalf("%d %v", rec.Code, rec.Result().Cookies())
		}
	})
}

func TestAPairingLinkWorksOnceAndExpires(t *testing.T) {
	clk := &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	srv := NewServer(Config{Router: newTestServer().cfg.Router, Token: "tok", Tokens: testTokens, Clock: clk})
	h := srv.TCPHandler(testHost)

	code := pairCode(t, srv, "approve", "10m")
	b := signIn(t, h, `{"pairing":"`+code+`"}`)
	if rec := b.do(h, "GET", "/v1/login", "", false); !strings.Contains(rec.Body.String(), `"scopes":"read,approve"`) {
		t.Fatalf("paired with %s", rec.Body.String())
	}
	if rec := tcpDo(h, "POST", "/v1/login", "", `{"pairing":"`+code+`"}`); rec.Code != http.StatusUnauthorized || len(rec.Result().Cookies()) != 0 {
		t.Fatalf("used twice: %d %s", rec.Code, rec.Body.String())
	}

	late := pairCode(t, srv, "", "1m")
	clk.Add(time.Minute)
	if rec := tcpDo(h, "POST", "/v1/login", "", `{"pairing":"`+late+`"}`); rec.Code != http.StatusUnauthorized {
		t.Fatalf("expired: %d %s", rec.Code, rec.Body.String())
	}

	clk.Add(SessionTTL)
	if rec := b.do(h, "GET", "/v1/login", "", false); rec.Code != http.StatusUnauthorized {
		t.Fatalf("a session past its TTL: %d", rec.Code)
	}

	reader := signIn(t, h, `{"token":"reader"}`)
	if rec := reader.do(h, "POST", "/v1/pairings", `{"scopes":"approve"}`, true); rec.Code != http.StatusForbidden {
		t.Fatalf("a pairing beyond the caller's scopes: %d %s", rec.Code, rec.Body.String())
	}
	for _, ttl := range []string{"0s", "25h", "soon"} {
		if rec := tcpDo(h, "POST", "/v1/pairings", "tok", `{"ttl":"`+ttl+`"}`); rec.Code != http.StatusBadRequest {
			t.Errorf("ttl %s: %d", ttl, rec.Code)
		}
	}
}

func TestARemovedTokenEndsWhatItPaired(t *testing.T) {
	toks := memTokens{
		"leaving": {ID: "t_leave", Label: "leaving", Scopes: AllScopes},
		"shrinks": {ID: "t_shr", Label: "shrinks", Scopes: Scopes(1<<ScopeRead | 1<<ScopeSend)},
	}
	srv := NewServer(Config{Router: newTestServer().cfg.Router, Token: "tok", Tokens: toks, RateLimit: clock.Bucket{Rate: -1}})
	h := srv.TCPHandler(testHost)
	pairAs := func(token string) string {
		t.Helper()
		rec := tcpDo(h, "POST", "/v1/pairings", token, `{"scopes":"send","ttl":"24h"}`, "Content-Type", "application/json")
		var p Pairing
		if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &p) != nil {
			t.Fatalf("pair as %s: %d %s", token, rec.Code, rec.Body.String())
		}
		return p.Code
	}
	unused := pairAs("leaving")
	paired := signIn(t, h, `{"pairing":"`+pairAs("leaving")+`"}`)
	fromCookie := paired.do(h, "POST", "/v1/pairings", `{"scopes":"send","ttl":"24h"}`, true, "Content-Type", "application/json")
	var grandchild Pairing
	if fromCookie.Code != http.StatusCreated || json.Unmarshal(fromCookie.Body.Bytes(), &grandchild) != nil {
		t.Fatalf("a paired browser pairs: %d %s", fromCookie.Code, fromCookie.Body.String())
	}
	delete(toks, "leaving")

	if rec := tcpDo(h, "POST", "/v1/login", "", `{"pairing":"`+unused+`"}`); rec.Code != http.StatusUnauthorized || len(rec.Result().Cookies()) != 0 {
		t.Fatalf("a removed token's pairing signed in: %d %s", rec.Code, rec.Body.String())
	}
	if rec := tcpDo(h, "POST", "/v1/login", "", `{"pairing":"`+grandchild.Code+`"}`); rec.Code != http.StatusUnauthorized {
		t.Fatalf("a pairing of a removed token's paired browser signed in: %d %s", rec.Code, rec.Body.String())
	}
	if rec := paired.do(h, "GET", "/v1/login", "", false); rec.Code != http.StatusUnauthorized {
		t.Fatalf("a browser paired by a removed token still reads: %d %s", rec.Code, rec.Body.String())
	}
	if rec := paired.do(h, "POST", "/v1/pairings", `{"ttl":"24h"}`, true, "Content-Type", "application/json"); rec.Code != http.StatusUnauthorized {
		t.Fatalf("a browser paired by a removed token still pairs: %d %s", rec.Code, rec.Body.String())
	}

	t.Run("a pairing never holds more than its token does now", func(t *testing.T) {
		code := pairAs("shrinks")
		toks["shrinks"] = Grant{ID: "t_shr", Label: "shrinks", Scopes: Scopes(1 << ScopeRead)}
		b := signIn(t, h, `{"pairing":"`+code+`"}`)
		if rec := b.do(h, "GET", "/v1/login", "", false); !strings.Contains(rec.Body.String(), `"scopes":"read"`) {
			t.Fatalf("paired by a read-only token: %s", rec.Body.String())
		}
	})
	t.Run("the control socket's pairings need no token", func(t *testing.T) {
		b := signIn(t, h, `{"pairing":"`+pairCode(t, srv, "approve", "")+`"}`)
		if rec := b.do(h, "GET", "/v1/login", "", false); rec.Code != http.StatusOK {
			t.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
	})
}

func TestSignInsAndPairingsAreBounded(t *testing.T) {
	srv := NewServer(Config{Router: newTestServer().cfg.Router, Token: "tok", Tokens: testTokens, RateLimit: clock.Bucket{Rate: -1}})
	h := srv.TCPHandler(testHost)
	other := signIn(t, h, `{"token":"approver"}`)
	first := signIn(t, h, `{"token":"tok"}`)
	for range maxBrowserSessions {
		signIn(t, h, `{"token":"tok"}`)
	}
	if rec := first.do(h, "GET", "/v1/login", "", false); rec.Code != http.StatusUnauthorized {
		t.Fatalf("the oldest of %d sign-ins is still in: %d", maxBrowserSessions+1, rec.Code)
	}
	if rec := other.do(h, "GET", "/v1/login", "", false); rec.Code != http.StatusOK {
		t.Fatalf("another token's sign-ins signed out the approver's browser: %d", rec.Code)
	}
	if n := len(srv.browser.sessions); n > maxBrowserSessions/4+1 {
		t.Fatalf("%d sessions kept, want one token's share (%d) and the approver's", n, maxBrowserSessions/4)
	}

	t.Run("a token's pairings never lock another's or the socket's out", func(t *testing.T) {
		share := maxPairings / 4
		for _, tok := range []string{"reader", "sender", "approver", "tok"} {
			for i := range share + 1 {
				rec := tcpDo(h, "POST", "/v1/pairings", tok, `{"ttl":"24h"}`)
				want := http.StatusCreated
				if i == share {
					want = http.StatusConflict
				}
				if rec.Code != want {
					t.Fatalf("%s's pairing %d: %d %s", tok, i+1, rec.Code, rec.Body.String())
				}
			}
		}
		for range maxPairings {
			pairCode(t, srv, "", "")
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/pairings", strings.NewReader(`{}`)))
		if rec.Code != http.StatusConflict {
			t.Fatalf("socket pairing %d: %d", maxPairings+1, rec.Code)
		}
	})
}
