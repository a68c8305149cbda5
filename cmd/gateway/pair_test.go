package main

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func TestPairPrintsALinkAndQRCodeThatSignABrowserInOnce(t *testing.T) {
	g := startBinary(t, t.TempDir(), "--api", "127.0.0.1:0")
	out, errOut, code := runCLI(t, g.StateDir, "pair", "--scope", "approve", "--ttl", "5m")
	if code != exitOK {
		t.Fatalf("pair: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "█") || !strings.Contains(out, "scopes read,approve") {
		t.Fatalf("no QR code or scopes in:\n%s", out)
	}
	link := regexp.MustCompile(`http://127\.0\.0\.1:\d+/#pair=([0-9a-f]{64})`).FindStringSubmatch(out)
	if link == nil {
		t.Fatalf("no pairing link in:\n%s", out)
	}
	u, _ := url.Parse(link[0])
	base := "http://" + u.Host
	page, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if page.StatusCode != 200 || !strings.Contains(page.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("the console page: %d %v", page.StatusCode, page.Header)
	}
	login := func() *http.Response {
		res, err := http.Post(base+"/v1/login", "application/json", strings.NewReader(`{"pairing":"`+link[1]+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := login(); res.StatusCode != http.StatusCreated || len(res.Cookies()) != 1 || !res.Cookies()[0].HttpOnly {
		t.Fatalf("first use: %d %v", res.StatusCode, res.Cookies())
	}
	if res := login(); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("second use: %d", res.StatusCode)
	}
	if _, errOut, code := runCLI(t, g.StateDir, "pair", "--ttl", "48h"); code == exitOK || !strings.Contains(errOut, "ttl") {
		t.Fatalf("a ttl past 24h: exit %d %s", code, errOut)
	}
}
