package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
)

// memTokens is a TokenStore over a map of token to grant.
type memTokens map[string]Grant

func (m memTokens) Verify(tok string) (Grant, bool) {
	for k, g := range m {
		if subtle.ConstantTimeCompare([]byte(k), []byte(tok)) == 1 {
			return g, true
		}
	}
	return Grant{}, false
}

var testTokens = memTokens{
	"reader":   {ID: "t_read", Label: "dashboard", Scopes: Scopes(1 << ScopeRead)},
	"sender":   {ID: "t_send", Label: "bot", Scopes: Scopes(1<<ScopeRead | 1<<ScopeSend)},
	"approver": {ID: "t_appr", Label: "phone", Scopes: Scopes(1<<ScopeRead | 1<<ScopeApprove)},
}

const testHost = "127.0.0.1:7777"

func tcpDo(h http.Handler, method, path, token, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Host = testHost
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestScopesDecideWhatATokenMayDo(t *testing.T) {
	srv, leg := newPermissionServer(t)
	srv.cfg.Tokens = testTokens
	h := srv.TCPHandler(testHost)
	deny := `{"behavior":"deny","message":"no"}`
	tests := []struct {
		name, method, path, token, body string
		status                          int
		missing                         string
	}{
		{"a read token lists prompts", "GET", "/v1/permissions", "reader", "", 200, ""},
		{"a read token cannot send", "POST", "/v1/messages", "reader", `{"to":"review","text":"hi"}`, 403, "send"},
		{"a token without approve cannot answer a permission prompt", "POST", "/v1/permissions/" + permID("bash"), "sender", deny, 403, "approve"},
		{"a token without approve cannot release a held message", "POST", "/v1/held/x", "sender", `{"action":"release"}`, 403, "approve"},
		{"a token without approve cannot send control requests", "POST", "/v1/control", "sender", `{"address":"review","kind":"interrupt"}`, 403, "approve"},
		{"a send token sends", "POST", "/v1/messages", "sender", `{"to":"review","text":"hi"}`, 201, ""},
		{"an approve token answers a permission prompt", "POST", "/v1/permissions/" + permID("bash"), "approver", deny, 200, ""},
		{"the default token has every scope", "POST", "/v1/permissions/" + permID("ask"), "tok", deny, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := tcpDo(h, tt.method, tt.path, tt.token, tt.body)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d: %s", rec.Code, tt.status, rec.Body.String())
			}
			if tt.missing != "" {
				var e Error
				if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != CodeForbidden || e.MissingScope != tt.missing || !strings.Contains(e.Error, tt.missing) {
					t.Fatalf("body = %s, want a forbidden error naming %q", rec.Body.String(), tt.missing)
				}
			}
		})
	}
	if n := len(leg.Answers()); n != 2 {
		t.Fatalf("the leg got %d answers, want only the two allowed ones", n)
	}
}

func TestTCPRefusesWhatItMust(t *testing.T) {
	srv := newTestServer()
	srv.cfg.Tokens = testTokens
	h := srv.TCPHandler(testHost)
	t.Run("every route but the probes is 401 without a token", func(t *testing.T) {
		for _, rt := range routes {
			path := strings.NewReplacer("{id}", "x", "{token}", "x").Replace(rt.path)
			rec := tcpDo(h, rt.method, path, "", "{}")
			want := http.StatusUnauthorized
			switch {
			case rt.anon: // reached: login refuses {}, actions are off here
				want = map[string]int{"/v1/login": http.StatusBadRequest, "/v1/actions/{token}": http.StatusNotFound}[rt.path]
			case rt.scope == 0:
				want = http.StatusOK
			}
			if rec.Code != want {
				t.Errorf("%s without a token: %d, want %d", rt.pattern(), rec.Code, want)
			}
			if want == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("%s: a 401 without WWW-Authenticate", rt.pattern())
			}
		}
	})
	t.Run("an unknown path is 401 without a token, not a map of the API", func(t *testing.T) {
		if rec := tcpDo(h, "GET", "/v2/secret", "", ""); rec.Code != 401 {
			t.Fatalf("status = %d", rec.Code)
		}
	})
	t.Run("a wrong Host is refused with 421", func(t *testing.T) {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = "evil.example:7777"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusMisdirectedRequest {
			t.Fatalf("status = %d", rec.Code)
		}
	})
	t.Run("an oversized body is 413 on TCP too", func(t *testing.T) {
		rec := tcpDo(h, "POST", "/v1/messages", "sender", `{"to":"review","text":"`+strings.Repeat("a", MaxBody)+`"}`)
		var e Error
		if rec.Code != http.StatusRequestEntityTooLarge || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != CodeTooLarge {
			t.Fatalf("%d %.200s", rec.Code, rec.Body.String())
		}
	})
	t.Run("an oversized body is 413 on a waiting route too", func(t *testing.T) {
		rec := tcpDo(h, "POST", "/v1/idle", "sender", `{"to":"`+strings.Repeat("a", MaxBody)+`"}`)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("%d %.200s", rec.Code, rec.Body.String())
		}
	})
}

// stepClock is a Clock moved by hand.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// AfterFunc never fires: the rate limiter only reads the time.
func (c *stepClock) AfterFunc(time.Duration, func()) clock.Stopper { return time.NewTimer(time.Hour) }
func (c *stepClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestRateLimits(t *testing.T) {
	clk := &stepClock{now: time.Unix(1e9, 0)}
	srv := newTestServer()
	srv.cfg.Tokens = testTokens
	srv.limit = newLimiter(clock.Bucket{Rate: 1, Burst: 3}, clk)
	h := srv.TCPHandler(testHost)
	t.Run("a client over its burst gets 429 with Retry-After", func(t *testing.T) {
		for i := range 3 {
			if rec := tcpDo(h, "GET", "/v1/sessions", "reader", ""); rec.Code != 200 {
				t.Fatalf("request %d: %d", i, rec.Code)
			}
		}
		rec := tcpDo(h, "GET", "/v1/sessions", "reader", "")
		var e Error
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != CodeRateLimited || e.RetryAfter != 1 {
			t.Fatalf("%d Retry-After=%q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
		}
	})
	t.Run("another token has its own bucket", func(t *testing.T) {
		if rec := tcpDo(h, "GET", "/v1/sessions", "sender", ""); rec.Code != 200 {
			t.Fatalf("%d", rec.Code)
		}
	})
	t.Run("the bucket refills with time", func(t *testing.T) {
		clk.Add(time.Second)
		if rec := tcpDo(h, "GET", "/v1/sessions", "reader", ""); rec.Code != 200 {
			t.Fatalf("%d", rec.Code)
		}
	})
	t.Run("a token guesser is limited by IP", func(t *testing.T) {
		codes := map[int]int{}
		for range 5 {
			codes[tcpDo(h, "GET", "/v1/sessions", "guess", "").Code]++
		}
		if codes[401] != 3 || codes[429] != 2 {
			t.Fatalf("codes = %v, want three 401 then two 429", codes)
		}
	})
}

func TestTheLimiterTableIsBounded(t *testing.T) {
	clk := &stepClock{now: time.Unix(1e9, 0)}
	l := newLimiter(clock.Bucket{Rate: 1, Burst: 2}, clk)
	for i := range maxBuckets {
		l.allow(strconv.Itoa(i))
	}
	if ok, _ := l.allow("new"); ok {
		t.Fatal("a new client was let in while every bucket is in use")
	}
	clk.Add(time.Second) // every bucket is full again: idle clients are forgotten
	if ok, _ := l.allow("new"); !ok {
		t.Fatal("a new client was refused after the others went idle")
	}
	if len(l.bks) > maxBuckets {
		t.Fatalf("%d buckets", len(l.bks))
	}
}

func TestCORS(t *testing.T) {
	const origin = "https://ui.example"
	preflight := []string{"Origin", origin, "Access-Control-Request-Method", "POST"}
	t.Run("with no origin configured a browser gets no CORS headers", func(t *testing.T) {
		h := newTestServer().TCPHandler(testHost)
		rec := tcpDo(h, "GET", "/v1/sessions", "tok", "", "Origin", origin)
		if rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%d %v", rec.Code, rec.Header())
		}
		if rec := tcpDo(h, "OPTIONS", "/v1/messages", "", "", preflight...); rec.Code == http.StatusNoContent || rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("preflight answered: %d %v", rec.Code, rec.Header())
		}
	})
	srv := newTestServer()
	srv.cfg.CORSOrigin = origin
	h := srv.TCPHandler(testHost)
	t.Run("the configured origin gets its preflight answered without a token", func(t *testing.T) {
		rec := tcpDo(h, "OPTIONS", "/v1/messages", "", "", preflight...)
		if rec.Code != http.StatusNoContent || rec.Header().Get("Access-Control-Allow-Origin") != origin ||
			!strings.Contains(rec.Header().Get("Access-Control-Allow-Headers"), "Authorization") {
			t.Fatalf("%d %v", rec.Code, rec.Header())
		}
	})
	t.Run("the configured origin may read answers", func(t *testing.T) {
		rec := tcpDo(h, "GET", "/v1/sessions", "tok", "", "Origin", origin)
		if rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != origin {
			t.Fatalf("%d %v", rec.Code, rec.Header())
		}
	})
	t.Run("another origin is refused its preflight and gets no CORS headers", func(t *testing.T) {
		rec := tcpDo(h, "OPTIONS", "/v1/messages", "", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
		if rec.Code != http.StatusForbidden || rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%d %v", rec.Code, rec.Header())
		}
		rec = tcpDo(h, "GET", "/v1/sessions", "tok", "", "Origin", "https://evil.example")
		if rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%v", rec.Header())
		}
	})
}

func TestTheUnixHandlerHasFullAccess(t *testing.T) {
	srv, _ := newPermissionServer(t)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/permissions/"+permID("bash"), strings.NewReader(`{"behavior":"deny","message":"no"}`)))
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
}

// writeCert writes a fresh self-signed certificate for 127.0.0.1 named cn.
func writeCert(t *testing.T, dir, cn string) (certFile, keyFile string, der []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err = x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, der
}

// touch moves both files' mtimes by d, so a change is seen even within the
// file system's timestamp granularity.
func touch(t *testing.T, d time.Duration, files ...string) {
	t.Helper()
	at := time.Now().Add(d)
	for _, f := range files {
		if err := os.Chtimes(f, at, at); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTLSServesAndReloads(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, der1 := writeCert(t, dir, "first")
	cr, err := NewCertReloader(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := newTestServer()
	srv.cfg.TLS = cr
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = NewHTTPServer(srv.TCPHandler(ts.Listener.Addr().String()))
	// Not StartTLS: it adds a certificate of its own, which wins over
	// GetCertificate for a client that sends no server name.
	ts.Listener = tls.NewListener(ts.Listener, cr.TLSConfig())
	ts.Start()
	defer ts.Close()
	base := "https://" + ts.Listener.Addr().String()

	// served asks for /healthz on a fresh connection and returns the
	// certificate the server showed.
	served := func(t *testing.T, cfg *tls.Config) ([]byte, error) {
		t.Helper()
		if cfg == nil {
			cfg = &tls.Config{InsecureSkipVerify: true} // the test compares the certificate itself
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
		resp, err := c.Get(base + "/healthz")
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return resp.TLS.PeerCertificates[0].Raw, nil
	}
	t.Run("the certificate from the files is served", func(t *testing.T) {
		pool := x509.NewCertPool()
		c, _ := x509.ParseCertificate(der1)
		pool.AddCert(c)
		got, err := served(t, &tls.Config{RootCAs: pool})
		if err != nil || string(got) != string(der1) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("TLS 1.1 is refused", func(t *testing.T) {
		if _, err := served(t, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11}); err == nil {
			t.Fatal("a TLS 1.1 handshake succeeded")
		}
	})
	t.Run("new files are picked up at the next handshake", func(t *testing.T) {
		_, _, der2 := writeCert(t, dir, "second")
		touch(t, time.Minute, certFile, keyFile)
		got, err := served(t, nil)
		if err != nil || string(got) != string(der2) {
			t.Fatalf("still the old certificate (err %v)", err)
		}
	})
	t.Run("a broken pair keeps the old certificate serving and is reported", func(t *testing.T) {
		before, _ := served(t, nil)
		if err := os.WriteFile(keyFile, []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
		touch(t, 2*time.Minute, keyFile)
		got, err := served(t, nil)
		if err != nil || string(got) != string(before) {
			t.Fatalf("err %v", err)
		}
		if cr.Err() == nil || srv.ReloadTLS() == nil {
			t.Fatal("the broken pair was not reported")
		}
	})
	t.Run("ReloadTLS loads the files at once", func(t *testing.T) {
		_, _, der3 := writeCert(t, dir, "third")
		if err := srv.ReloadTLS(); err != nil {
			t.Fatal(err)
		}
		got, err := served(t, nil)
		if err != nil || string(got) != string(der3) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("a missing pair at start is an error", func(t *testing.T) {
		if _, err := NewCertReloader(filepath.Join(dir, "nope.pem"), keyFile); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestLongRoutesOutliveTheWriteTimeout(t *testing.T) {
	srv := newTestServer()
	hs := NewHTTPServer(srv.Handler())
	// Far shorter than the wait below: a route with the server's deadlines
	// would lose its connection before answering.
	hs.WriteTimeout, hs.ReadTimeout = 20*time.Millisecond, 20*time.Millisecond
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = hs
	ts.Start()
	defer ts.Close()
	c := &Client{base: ts.URL, http: &http.Client{}}
	out, err := c.Send(context.Background(), SendBody{To: "review", Body: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(ts.URL + "/v1/messages/" + out.Message.ID + "?wait=1&timeout=200ms")
	if err != nil {
		t.Fatalf("the wait lost its connection: %v", err)
	}
	defer resp.Body.Close()
	var got struct{ Status message.Status }
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&got) != nil {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestOversizedHeadersAreRefused(t *testing.T) {
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = NewHTTPServer(newTestServer().Handler())
	ts.Start()
	defer ts.Close()
	req, _ := http.NewRequest("GET", ts.URL+"/healthz", nil)
	req.Header.Set("X-Padding", strings.Repeat("a", 2*MaxHeaderBytes))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
}

func TestARateOfZeroLetsEveryRequestThrough(t *testing.T) {
	clk := &stepClock{now: time.Unix(1e9, 0)}
	for _, lim := range []clock.Bucket{NoRateLimit, {Rate: 0, Burst: 5}} {
		l := newLimiter(lim, clk)
		for i := range 1000 {
			if ok, _ := l.allow("client"); !ok {
				t.Fatalf("%+v: request %d refused", lim, i)
			}
		}
	}
}
