package api

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

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
	var refused *http.Response
	testutil.Eventually(t, "a body past MaxBodies refused", func() bool {
		refused = send()
		return refused.StatusCode == http.StatusTooManyRequests
	})
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
