package api

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

func TestAnEventStreamNobodyReadsEndsWithinItsStall(t *testing.T) {
	const stall = 300 * time.Millisecond
	rt := router.New(router.Config{KeepEvents: 8}, claudeStub())
	srv := NewServer(Config{Router: rt, StreamStall: stall})
	inner := srv.Handler()
	done := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		if r.URL.Path == "/v1/events" {
			close(done)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(h)
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	if _, err := fmt.Fprint(c, "GET /v1/events HTTP/1.1\r\nHost: gateway\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// The client never reads: the kernel's buffers fill, then the
	// handler's write stalls; the hub cuts the subscription meanwhile.
	big := strings.Repeat("x", 64<<10)
	bound := time.After(stall + 15*time.Second) // a bound on a hang, not a speed
	for {
		select {
		case <-done:
			return
		case <-bound:
			t.Fatal("the handler of a stream nobody reads did not return")
		default:
		}
		rt.Hub().Publish(message.Event{Type: message.EventMessage, Message: &message.Message{ID: "m", Body: big}})
		time.Sleep(time.Millisecond)
	}
}

func TestEventStreamsAndWaitsAreCappedPerClient(t *testing.T) {
	var drops atomic.Int64
	srv := NewServer(Config{Router: router.New(router.Config{}, claudeStub()), Drop: func(r string) {
		if r == DropStreams {
			drops.Add(1)
		}
	}})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	open := func() *http.Response {
		resp, err := http.Get(hs.URL + "/v1/events")
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var streams []*http.Response
	for range MaxStreamsPerGrant {
		resp := open()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %d, want 200", len(streams)+1, resp.StatusCode)
		}
		streams = append(streams, resp)
	}
	refused := []struct{ name, method, path, body string }{
		{"another stream", "GET", "/v1/events", ""},
		{"a wait on a message", "GET", "/v1/messages/m-1?wait=1&timeout=1s", ""},
		{"a send that waits", "POST", "/v1/messages", `{"to":"review","body":"x","wait":true}`},
		{"an idle wait", "POST", "/v1/idle", `{"to":"review","wait":true}`},
	}
	for _, tt := range refused {
		req, _ := http.NewRequest(tt.method, hs.URL+tt.path, strings.NewReader(tt.body))
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e Error
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || e.Code != CodeRateLimited || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s past the share: %d %+v, want 429 %s with Retry-After", tt.name, resp.StatusCode, e, CodeRateLimited)
		}
	}
	if n := drops.Load(); n != int64(len(refused)) {
		t.Errorf("%d refusals counted, want %d", n, len(refused))
	}
	if rec := postMessage(srv.Handler(), `{"to":"review","body":"no wait"}`); rec.Code != http.StatusCreated {
		t.Errorf("a send that does not wait: %d, want 201", rec.Code)
	}
	streams[0].Body.Close()
	deadline := time.Now().Add(10 * time.Second) // the server sees the close when it next notices the client left
	for {
		resp := open()
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's slot was not given back: %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, s := range streams[1:] {
		s.Body.Close()
	}
}

func TestTheStreamGateKeepsEachClientsShareAndTheTotal(t *testing.T) {
	g := newStreamGate(5, 2)
	var held []func()
	take := func(who string) bool {
		release, why := g.take(who)
		if why == "" {
			held = append(held, release)
		}
		return why == ""
	}
	steps := []struct {
		who  string
		want bool
	}{{"a", true}, {"a", true}, {"a", false}, {"b", true}, {"b", true}, {"c", true}, {"c", false}, {"d", false}}
	for i, s := range steps {
		if got := take(s.who); got != s.want {
			t.Fatalf("step %d (%s): took %v, want %v", i, s.who, got, s.want)
		}
	}
	held[0]()
	held[0]() // twice is once
	if !take("d") || take("d") {
		t.Fatal("one slot given back is one slot free")
	}
	for i, want := range []bool{true, true, false} {
		if got := take(socketOwner); got != want {
			t.Fatalf("the control socket's stream %d: took %v, want %v (its share, outside the total the tokens filled)", i+1, got, want)
		}
	}
}
