package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
)

func TestTokensAddListRemove(t *testing.T) {
	sd := filepath.Join(t.TempDir(), "state")
	out, _, code := runCLI(t, sd, "tokens", "add", "--label", "phone", "--scope", "read,approve")
	tok := strings.TrimSpace(out)
	if code != 0 || !regexp.MustCompile(`^gwt_[0-9a-f]{64}$`).MatchString(tok) {
		t.Fatalf("add printed %q (exit %d), want a gwt_ token", out, code)
	}
	file := filepath.Join(sd, "api-tokens.json")
	t.Run("only the token's hash is stored, in a 0600 file", func(t *testing.T) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(tok[4:])) {
			t.Fatal("the token itself is stored")
		}
		if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v", fi.Mode().Perm())
		}
	})
	t.Run("a second token with the same label is refused", func(t *testing.T) {
		if _, _, code := runCLI(t, sd, "tokens", "add", "--label", "PHONE"); code == 0 {
			t.Fatal("accepted")
		}
	})
	t.Run("an unknown scope is a usage error", func(t *testing.T) {
		if _, errOut, code := runCLI(t, sd, "tokens", "add", "--label", "x", "--scope", "read,admin"); code != exitUsage || !strings.Contains(errOut, "admin") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
	store := api.NewTokenFile(sd, nil)
	t.Run("the token verifies with its scopes", func(t *testing.T) {
		g, ok := store.Verify(tok)
		if !ok || g.Label != "phone" || !g.Scopes.Has(api.ScopeApprove) || g.Scopes.Has(api.ScopeSend) {
			t.Fatalf("Verify = %+v, %v", g, ok)
		}
		if _, ok := store.Verify(api.TokenPrefix + strings.Repeat("0", 64)); ok {
			t.Fatal("a different token verified")
		}
	})
	var id string
	t.Run("list shows label, scopes and last use, never the token", func(t *testing.T) {
		out, _, _ := runCLI(t, sd, "tokens", "list", "--json")
		var list []map[string]any
		if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 || list[0]["label"] != "phone" || fmt.Sprint(list[0]["scopes"]) != "[read approve]" || list[0]["last_used_at"] == nil {
			t.Fatalf("list = %s", out)
		}
		id = list[0]["id"].(string)
		table, _, _ := runCLI(t, sd, "tokens", "list")
		for _, s := range []string{out, table} {
			if strings.Contains(s, tok) || strings.Contains(s, tok[4:]) {
				t.Fatal("list shows the token")
			}
		}
		if !strings.Contains(table, "LAST USED") || !strings.Contains(table, "read,approve") {
			t.Fatalf("table = %s", table)
		}
	})
	t.Run("a removed token no longer verifies, and removing twice fails", func(t *testing.T) {
		if out, _, code := runCLI(t, sd, "tokens", "remove", id); code != 0 || !strings.Contains(out, "phone") {
			t.Fatalf("remove: %d %s", code, out)
		}
		if _, ok := store.Verify(tok); ok {
			t.Fatal("still verifies")
		}
		if _, _, code := runCLI(t, sd, "tokens", "remove", id); code == 0 {
			t.Fatal("removed twice")
		}
	})
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gateway"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	c, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(c)
	return certFile, keyFile, pool
}

func TestServeHardensTheTCPAPI(t *testing.T) {
	root := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, root)
	addr := testutil.FreePort(t)
	sd := filepath.Join(root, "state")
	out, _, code := runCLI(t, sd, "tokens", "add", "--label", "dashboard", "--scope", "read")
	if code != 0 {
		t.Fatalf("tokens add: %d", code)
	}
	readTok := strings.TrimSpace(out)
	startBinary(t, root, "--api", addr, "--tls-cert", certFile, "--tls-key", keyFile, "--api-rate", "100", "--api-burst", "100")
	b, err := os.ReadFile(filepath.Join(sd, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	defaultTok := strings.TrimSpace(string(b))
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	do := func(method, path, tok string) int {
		req, _ := http.NewRequestWithContext(context.Background(), method, "https://"+addr+path, strings.NewReader(`{"behavior":"deny","message":"no"}`))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name, method, path, tok string
		want                    int
	}{
		{"healthz answers over TLS without a token", "GET", "/healthz", "", 200},
		{"sessions need a token", "GET", "/v1/sessions", "", 401},
		{"a read token minted by the CLI lists sessions", "GET", "/v1/sessions", readTok, 200},
		{"a read token cannot answer a permission prompt", "POST", "/v1/permissions/p123456", readTok, 403},
		{"the default token from <state-dir>/api-token lists sessions", "GET", "/v1/sessions", defaultTok, 200},
		{"the default token may answer prompts (this one is unknown)", "POST", "/v1/permissions/p123456", defaultTok, 404},
		{"a wrong token is refused", "GET", "/v1/sessions", defaultTok + "x", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := do(tt.method, tt.path, tt.tok); got != tt.want {
				t.Fatalf("status %d, want %d", got, tt.want)
			}
		})
	}
}

func TestAPIFlagsAreChecked(t *testing.T) {
	tests := []struct {
		name string
		o    apiOpts
		addr string
		ok   bool
	}{
		{"the defaults pass", apiOpts{limit: clock.Bucket{Rate: 20, Burst: 50}}, "", true},
		{"a certificate without a key is refused", apiOpts{tlsCert: "c.pem", limit: clock.Bucket{Rate: 1, Burst: 1}}, "127.0.0.1:0", false},
		{"TLS without --api is refused", apiOpts{tlsCert: "c.pem", tlsKey: "k.pem", limit: clock.Bucket{Rate: 1, Burst: 1}}, "", false},
		{"a CORS origin with a path is refused", apiOpts{corsOrigin: "https://ui.example/app", limit: clock.Bucket{Rate: 1, Burst: 1}}, "", false},
		{"a CORS origin passes", apiOpts{corsOrigin: "https://ui.example:8443", limit: clock.Bucket{Rate: 1, Burst: 1}}, "", true},
		{"a zero burst with a rate is refused", apiOpts{limit: clock.Bucket{Rate: 1}}, "", false},
		{"a negative rate turns limits off", apiOpts{limit: clock.Bucket{Rate: -1}}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.o.check(tt.addr); (err == nil) != tt.ok {
				t.Fatalf("check = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
