package abuse

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// TestHealthUnderAWrongTokenFlood: 80 wrong bearer tokens from one address
// exhaust its rate-limit bucket for the API, and the probes stay up:
// `gateway health --url` and /readyz answer, not 429.
func TestHealthUnderAWrongTokenFlood(t *testing.T) {
	addr := testutil.FreePort(t)
	g := gatewaytest.Start(t, gatewaytest.NewWorld(t), "gateway", "--legs", "claude", "--api", addr)
	c := &http.Client{Timeout: 10 * time.Second}
	codes := map[int]int{}
	for range 80 {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/sessions", nil)
		req.Header.Set("Authorization", "Bearer wrong-token")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	if codes[http.StatusTooManyRequests] == 0 {
		t.Fatalf("the flood was never rate limited: %v", codes)
	}
	if out, code, err := g.Run(t, "health", "--url", "http://"+addr); err != nil || code != 0 {
		t.Errorf("gateway health --url after the flood: exit %d, %v\n%s", code, err, out)
	}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests {
		t.Errorf("/readyz after the flood: 429")
	}
	t.Logf("flood of 80 wrong tokens: %v; health and readyz answered", codes)
}

// TestASlowBodyGets408: a request body trickling in at one byte a second
// on the control socket is answered 408 with a JSON error once the
// server's read timeout passes, not a 500.
func TestASlowBodyGets408(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.NewWorld(t), "gateway", "--legs", "claude")
	conn, err := net.Dial("unix", g.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const body = `{"to":"nobody-at-all","text":"a body that takes a minute to arrive"}`
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	done := make(chan struct{})
	defer close(done)
	go func() {
		for i := range len(body) {
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				return
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(api.ReadTimeout + 10*time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to the slow body: %v", err)
	}
	defer resp.Body.Close()
	var e api.Error
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("slow body: %d, want 408", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Code != api.CodeRequestTimeout {
		t.Fatalf("slow body: error %+v (%v), want code %s", e, err, api.CodeRequestTimeout)
	}
	t.Logf("a 1 B/s body: %d %s after %v", resp.StatusCode, e.Code, time.Since(start).Round(time.Millisecond))
}
