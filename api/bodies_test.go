package api

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/router"
)

// TestBodiesPastMaxBodiesAreRefusedUnreadAndCounted: MaxBodies clients
// each send a body's first byte and stall; the next request with a body is
// a 429 with Retry-After, counted, its body unread, while a request
// without one is still served; once the stalled clients go, bodies are
// read again. Without the cap every stalled body held up to MaxBody.
func TestBodiesPastMaxBodiesAreRefusedUnreadAndCounted(t *testing.T) {
	var drops atomic.Int64
	srv := NewServer(Config{Router: router.New(router.Config{}, claudeStub()), Token: "tok",
		Drop: func(r string) {
			if r == DropBodies {
				drops.Add(1)
			}
		}})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	var stalled []net.Conn
	for range MaxBodies {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", MaxBody)
		stalled = append(stalled, c)
	}
	send := func() *http.Response {
		resp, err := http.Post(ts.URL+"/v1/messages", "application/json", strings.NewReader(`{"to":"nobody","text":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// Every stalled body holds its slot before the next is tried: on a
	// loaded machine the server may take a while to reach them all.
	if !testutil.Within(30*time.Second, func() bool { return len(srv.bodies.slots) == MaxBodies }) {
		t.Fatalf("%d of %d stalled bodies hold a slot after 30 s", len(srv.bodies.slots), MaxBodies)
	}
	refused := send()
	if refused.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a body past MaxBodies: %s, want 429", refused.Status)
	}
	if refused.Header.Get("Retry-After") == "" || drops.Load() == 0 {
		t.Errorf("the refusal: Retry-After %q, %d counted", refused.Header.Get("Retry-After"), drops.Load())
	}
	if resp, err := http.Get(ts.URL + "/v1/sessions"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("a request without a body meanwhile: %v %v", resp, err)
	}
	for _, c := range stalled {
		c.Close()
	}
	testutil.Eventually(t, "bodies read again", func() bool { return send().StatusCode != http.StatusTooManyRequests })
}

// TestStalledBodiesTakeOnlyTheirListenersSlots: TCP requests without a
// token (login) that stall hold at most MaxAnonBodies slots of their own,
// so a client with a token and the control socket still send; a token
// whose bodies stall holds at most MaxBodiesPerGrant of the TCP slots (its
// logins' bodies count to it too), so another token and the control socket
// still send.
func TestStalledBodiesTakeOnlyTheirListenersSlots(t *testing.T) {
	srv := NewServer(Config{Router: router.New(router.Config{}, claudeStub()), Token: "tok",
		Tokens: memTokens{"other": {ID: "t_other", Label: "bot", Scopes: Scopes(1<<ScopeRead | 1<<ScopeSend)}}})
	tcp := httptest.NewServer(srv.TCPHandler(testHost))
	t.Cleanup(tcp.Close) // after the stalled connections close (cleanups run last first)
	unix := httptest.NewServer(srv.Handler())
	t.Cleanup(unix.Close)
	stall := func(n int, head string) {
		for range n {
			c, err := net.Dial("tcp", tcp.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			fmt.Fprintf(c, "%sHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", head, testHost)
		}
	}
	// post's status, 429 only when refused for want of a body slot (not
	// by the rate limit).
	post := func(base, path, token string) int {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(`{"to":"nobody","text":"hi"}`))
		req.Host = testHost
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests && !strings.Contains(string(raw), "being read") {
			return -resp.StatusCode
		}
		return resp.StatusCode
	}
	stall(MaxAnonBodies, "POST /v1/login HTTP/1.1\r\n")
	testutil.Eventually(t, "a login past MaxAnonBodies refused", func() bool {
		return post(tcp.URL, "/v1/login", "") == http.StatusTooManyRequests
	})
	if st := post(tcp.URL, "/v1/messages", "tok"); st == http.StatusTooManyRequests {
		t.Errorf("a TCP send with a token while logins stall: %d", st)
	}
	if st := post(unix.URL, "/v1/messages", ""); st == http.StatusTooManyRequests {
		t.Errorf("a control-socket send while logins stall: %d", st)
	}
	stall(MaxBodies, "POST /v1/messages HTTP/1.1\r\nAuthorization: Bearer tok\r\n")
	testutil.Eventually(t, "a send past the token's share refused", func() bool {
		return post(tcp.URL, "/v1/messages", "tok") == http.StatusTooManyRequests
	})
	if st := post(tcp.URL, "/v1/login", "tok"); st != http.StatusTooManyRequests {
		t.Errorf("a login with that token, its body the token's too: %d", st)
	}
	if st := post(tcp.URL, "/v1/messages", "other"); st == http.StatusTooManyRequests {
		t.Errorf("another token's send while one token's bodies stall: %d", st)
	}
	if st := post(unix.URL, "/v1/messages", ""); st == http.StatusTooManyRequests {
		t.Errorf("a control-socket send while TCP bodies stall: %d", st)
	}
}

// TestOneClientStallingLoginsCannotBlockEveryoneElsesSignIn: stalled
// logins from one address hold one anonymous body slot, not all of them;
// a login body is small and must arrive within AnonReadTimeout.
func TestOneClientStallingLoginsCannotBlockEveryoneElsesSignIn(t *testing.T) {
	srv := NewServer(Config{Router: router.New(router.Config{}, claudeStub()), Token: "tok"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	hs := NewHTTPServer(srv.TCPHandler(addr))
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	from := func(ip string) *net.Dialer {
		return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	}
	c, err := from("127.0.0.2").Dial("tcp", addr)
	testutil.Need(t, err == nil, "no second loopback source address here: %v", err)
	c.Close()
	var stalled []net.Conn
	for range MaxAnonBodies + 2 {
		c, err := from("127.0.0.2").Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, c)
		fmt.Fprintf(c, "POST /v1/login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", addr)
	}
	defer func() {
		for _, c := range stalled {
			c.Close()
		}
	}()
	login := func(ip, body string) (int, string) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: from(ip).DialContext}}
		resp, err := c.Post("http://"+addr+"/v1/login", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	// Let the stalled requests reach their handlers first.
	testutil.Eventually(t, "the stalling address refused a slot of its own", func() bool {
		st, raw := login("127.0.0.2", `{"token":"tok"}`)
		return st == http.StatusTooManyRequests && strings.Contains(raw, "being read")
	})
	if st, raw := login("127.0.0.3", `{"token":"tok"}`); st != http.StatusCreated {
		t.Fatalf("a sign-in from another address while one stalls: %d %s, want 201", st, raw)
	}
	if st, _ := login("127.0.0.3", `{"token":"`+strings.Repeat("x", MaxAnonBody)+`"}`); st != http.StatusRequestEntityTooLarge {
		t.Fatalf("a login body over MaxAnonBody: %d, want 413", st)
	}
	// The one stalled login that got the address's slot (whichever the
	// server reached first) is cut at AnonReadTimeout, a bound on a hang;
	// the others were refused at once.
	answers := map[string]int{}
	for _, c := range stalled {
		_ = c.SetReadDeadline(time.Now().Add(AnonReadTimeout + 5*time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			t.Fatalf("a stalled login got no answer: %v", err)
		}
		answers[strings.TrimSpace(line)]++
	}
	want := map[string]int{
		"HTTP/1.1 408 Request Timeout":   1,
		"HTTP/1.1 429 Too Many Requests": len(stalled) - 1,
	}
	if !maps.Equal(answers, want) {
		t.Fatalf("the stalled logins' answers: %v, want %v", answers, want)
	}
}
