package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
)

func TestProbesAreNotRateLimited(t *testing.T) {
	srv := newTestServer()
	srv.cfg.Tokens = testTokens
	srv.limit = newLimiter(clock.Bucket{Rate: 1, Burst: 3}, &stepClock{now: time.Unix(1e9, 0)})
	h := srv.TCPHandler(testHost)
	for range 80 {
		tcpDo(h, "GET", "/v1/sessions", "guess", "")
	}
	if rec := tcpDo(h, "GET", "/v1/sessions", "guess", ""); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("the guesser's next request: %d, want 429", rec.Code)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		for _, tok := range []string{"", "guess"} {
			if rec := tcpDo(h, "GET", path, tok, ""); rec.Code != http.StatusOK {
				t.Errorf("%s (token %q) after 80 wrong tokens from this address: %d, want 200", path, tok, rec.Code)
			}
		}
	}
}

func TestHostIsMatchedCaseInsensitively(t *testing.T) {
	srv := newTestServer()
	srv.cfg.AllowedHosts = []string{"GW.lan:7777"}
	h := srv.TCPHandler(testHost)
	for _, tt := range []struct {
		host string
		want int
	}{
		{"LOCALHOST:7777", 200},
		{"localhost.:7777", 200},
		{"gw.LAN:7777", 200},
		{"gw.lan.:7777", 200},
		{"[::1]:7777", 200},
		{"gw.lan:7778", http.StatusMisdirectedRequest},
		{"evil.example:7777", http.StatusMisdirectedRequest},
		{"localhost..:7777", http.StatusMisdirectedRequest},
	} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = tt.host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("Host %q: %d, want %d", tt.host, rec.Code, tt.want)
		}
	}
}

func TestBodiesWithDuplicateKeysOrDeepNestingAre400(t *testing.T) {
	h := newTestServer().Handler()
	for _, tt := range []struct{ name, path, body, want string }{
		{"a repeated key", "/v1/messages", `{"to":"review","text":"a","to":"work"}`, "duplicate key"},
		{"a repeated key spelled with an escape", "/v1/messages", `{"to":"review","text":"a","t\u006f":"work"}`, "duplicate key"},
		{"a repeated key in a nested object", "/v1/permissions/x", `{"behavior":"allow","updatedInput":{"a":1,"a":2}}`, "duplicate key"},
		{"a repeated key on a short route", "/v1/held/x", `{"action":"release","action":"deny"}`, "duplicate key"},
		{"nesting past the cap", "/v1/messages", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "nested deeper"},
		{"a megabyte of brackets", "/v1/messages", strings.Repeat("[", 1<<20), "nested deeper"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", tt.path, strings.NewReader(tt.body))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var e Error
			if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != CodeBadRequest || !strings.Contains(e.Error, tt.want) {
				t.Fatalf("%d %.300s, want 400 saying %q", rec.Code, rec.Body.String(), tt.want)
			}
		})
	}
	t.Run("brackets inside strings do not count", func(t *testing.T) {
		body := fmt.Sprintf(`{"to":"review","text":%q}`, strings.Repeat("[{", 200))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body)))
		if rec.Code != http.StatusCreated {
			t.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
	})
}

// slowPost writes a request whose body comes a byte at a time, every
// pause, and returns the status line and body of the answer.
func slowPost(t *testing.T, addr, path string, pause time.Duration) (int, Error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const body = `{"to":"review","text":"slow"}`
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, addr, len(body))
	done := make(chan struct{})
	defer close(done)
	go func() {
		for i := range len(body) {
			select {
			case <-done:
				return
			case <-time.After(pause):
			}
			if _, err := c.Write([]byte{body[i]}); err != nil {
				return
			}
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e Error
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e
}

func TestASlowBodyIs408(t *testing.T) {
	hs := NewHTTPServer(newTestServer().Handler())
	hs.ReadTimeout = 300 * time.Millisecond
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = hs
	ts.Start()
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	for _, path := range []string{"/v1/messages", "/v1/held/x"} { // a long route and a short one
		code, e := slowPost(t, addr, path, 100*time.Millisecond)
		if code != http.StatusRequestTimeout || e.Code != CodeRequestTimeout {
			t.Errorf("POST %s a byte every 100 ms: %d %+v, want 408 %s", path, code, e, CodeRequestTimeout)
		}
	}
}

// TestTheTCPListenerCapsItsConnections: past the cap a connection waits,
// unserved, until one closes.
func TestTheTCPListenerCapsItsConnections(t *testing.T) {
	ln, err := listenTCP("127.0.0.1:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	held := []net.Conn{dial(), dial()} // silent: each holds its connection
	c := dial()
	fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _ := c.Read(make([]byte, 1)); n != 0 {
		t.Fatal("a connection past the cap was served while the others stayed open")
	}
	held[0].Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, "200") {
		t.Fatalf("once one closed: %q %v, want a 200", line, err)
	}
}
