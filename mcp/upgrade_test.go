package mcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
)

// upgradeAs asks addr's /mcp for the stdio upgrade with token and sends
// nothing more: the connection and the status line of the answer.
func upgradeAs(t *testing.T, addr, token string) (net.Conn, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", addr, token, UpgradeProtocol)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, resp
}

// TestUpgradesThatNeverInitializeAreBoundedAndClosed: a token that opens
// the stdio upgrade over and over and sends nothing holds at most its
// share of the sessions, each only pendingFor; the refused are counted.
// Before, each held a connection and its goroutines for good.
func TestUpgradesThatNeverInitializeAreBoundedAndClosed(t *testing.T) {
	w := newWorld(t)
	var mu sync.Mutex
	drops := map[string]int{}
	w.srv.cfg.Drop = func(r string) { mu.Lock(); drops[r]++; mu.Unlock() }
	w.srv.pendingFor = time.Second // 192 upgrades on loopback take far less, mostly
	addr := strings.TrimSuffix(strings.TrimPrefix(tokenWorld(t, w), "http://"), "/mcp")
	base := runtime.NumGoroutine()
	// Beside the flood: one client that joins stays, one that only sends
	// initialize is closed and counted once.
	joined, _ := upgradeAs(t, addr, "tok-b")
	half, _ := upgradeAs(t, addr, "tok-c")
	for _, c := range []net.Conn{joined, half} {
		fmt.Fprintln(c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"steady","version":"1"}}}`)
	}
	if _, err := bufio.NewReader(joined).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(joined, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	testutil.Eventually(t, "the steady client in the roster", func() bool { return w.listed("steady") })
	base += 2 * 3 // the joined one's connection, session and pushes stay

	start := time.Now()
	var upgraded []net.Conn
	for range 3 * MaxSessionsPerToken {
		c, resp := upgradeAs(t, addr, "tok-a")
		switch resp.StatusCode {
		case http.StatusSwitchingProtocols:
			upgraded = append(upgraded, c)
		case http.StatusServiceUnavailable:
			var e api.Error
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || !strings.Contains(e.Error, "with this token") {
				t.Fatalf("a refused upgrade says %+v, %v", e, err)
			}
			c.Close()
		default:
			t.Fatalf("upgrade answered %d", resp.StatusCode)
		}
	}
	if time.Since(start) < w.srv.pendingFor && len(upgraded) != MaxSessionsPerToken {
		t.Fatalf("%d upgrades of one token open at once, want its share %d", len(upgraded), MaxSessionsPerToken)
	}
	mu.Lock()
	if got := drops[DropTokenShare]; got != 3*MaxSessionsPerToken-len(upgraded) {
		t.Errorf("%d refusals counted %s, want %d", got, DropTokenShare, 3*MaxSessionsPerToken-len(upgraded))
	}
	mu.Unlock()
	for i, c := range append(upgraded, half) {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil { // EOF, after any answer
			t.Fatalf("half-open upgrade %d not closed by the gateway: %v", i, err)
		}
		c.Close()
	}
	testutil.Eventually(t, "every slot but the joined one's free", func() bool { return w.srv.Open() == 1 })
	if !w.listed("steady") {
		t.Error("a client that joined was closed after pendingFor")
	}
	testutil.Eventually(t, "goroutines back near the start", func() bool { return runtime.NumGoroutine() <= base+5 })
	mu.Lock()
	if drops[DropNotInitialized] != len(upgraded)+1 {
		t.Errorf("%d closed as %s, want %d", drops[DropNotInitialized], DropNotInitialized, len(upgraded)+1)
	}
	mu.Unlock()
}

// TestCloseEndsUpgradesThatNeverInitialized: the server's Close reaches a
// stdio connection still waiting for initialize.
func TestCloseEndsUpgradesThatNeverInitialized(t *testing.T) {
	w := newWorld(t)
	w.srv.pendingFor = time.Hour
	addr := strings.TrimSuffix(strings.TrimPrefix(tokenWorld(t, w), "http://"), "/mcp")
	var conns []net.Conn
	for range 3 {
		c, resp := upgradeAs(t, addr, "tok-a")
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade answered %d", resp.StatusCode)
		}
		conns = append(conns, c)
	}
	closed := make(chan struct{})
	go func() { w.srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
			t.Fatalf("upgrade %d still open after Close: %v", i, err)
		}
	}
}
