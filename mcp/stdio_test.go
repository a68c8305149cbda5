package mcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// TestStdioJoinsThroughTheControlSocketAndLeavesWhenItsInputEnds runs
// Stdio (what `gateway mcp` runs) against an API served on a Unix socket,
// with an SDK client on its stdin and stdout.
func TestStdioJoinsThroughTheControlSocketAndLeavesWhenItsInputEnds(t *testing.T) {
	w := newWorld(t)
	sock := serveAPI(t, w)

	ctx := testutil.Context(t, 30*time.Second)
	inR, inW := io.Pipe()   // the agent writes, Stdio reads (its stdin)
	outR, outW := io.Pipe() // Stdio writes (its stdout), the agent reads
	done := make(chan error, 1)
	go func() {
		done <- Stdio(ctx, api.NewUnixClient(sock), StdioOptions{Name: "stdio-agent"}, inR, outW)
		_ = outW.Close()
	}()

	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent"}, nil).Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "stdio-agent in the roster", func() bool { return w.listed("stdio-agent") })
	var list struct{ Sessions []message.Session }
	mustCall(t, cs, "list_sessions", map[string]any{"name": "stdio"}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Protocol != message.ProtocolMCP || list.Sessions[0].Kind != "stdio" {
		t.Fatalf("list_sessions = %+v", list.Sessions)
	}
	_ = inW.Close() // the agent exits
	testutil.Eventually(t, "stdio-agent out of the roster", func() bool { return !w.listed("stdio-agent") })
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Stdio: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Stdio did not return")
	}
	_ = cs.Close()
}

// TestAnOversizedStdioRequestIsAnErrorAndTheSessionGoesOn writes raw
// JSON-RPC lines through the stdio bridge: a line over MaxInput is
// answered with an MCP error, and the next request still is served.
func TestAnOversizedStdioRequestIsAnErrorAndTheSessionGoesOn(t *testing.T) {
	w := newWorld(t)
	sock := serveAPI(t, w)

	ctx := testutil.Context(t, 30*time.Second)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		_ = Stdio(ctx, api.NewUnixClient(sock), StdioOptions{Name: "raw-agent"}, inR, outW)
		_ = outW.Close()
	}()
	t.Cleanup(func() { _ = inW.Close() })
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	reply := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("no reply: %v", lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("reply %q: %v", lines.Text(), err)
		}
		return m
	}
	write := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := reply(); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	huge := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"x","text":"` +
		strings.Repeat("x", MaxInput) + `"}}}`
	write(huge)
	m := reply()
	e, _ := m["error"].(map[string]any)
	if e == nil || m["id"] != nil || !strings.Contains(fmt.Sprint(e["message"]), "cap") {
		t.Fatalf("the oversized request got %v", m)
	}
	write(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if m := reply(); m["id"] != float64(3) || m["result"] == nil {
		t.Fatalf("after the oversized request, tools/list got %v", m)
	}
	if !w.listed("raw-agent") {
		t.Fatal("the client left the roster")
	}
}

// serveAPI serves w's API, /mcp included, on a Unix socket, as the
// gateway's control socket, and returns the socket's path.
func serveAPI(t *testing.T, w *world) string {
	t.Helper()
	sock := filepath.Join(testutil.ShortTempDir(t), "gateway.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := api.NewHTTPServer(api.NewServer(api.Config{Router: w.rt, MCP: w.srv.Handler()}).Handler())
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return sock
}

// TestABridgeThatStopsReadingIsEndedAfterTheWriteStall: a `gateway mcp`
// connection that sends requests and never reads the answers is closed
// once a write waits writeStall, so it leaves the roster and the server
// still closes promptly. Before, the write (and the session's close, and
// the gateway's shutdown) waited forever.
func TestABridgeThatStopsReadingIsEndedAfterTheWriteStall(t *testing.T) {
	w := newWorld(t)
	w.srv.writeStall = 200 * time.Millisecond
	sock := serveAPI(t, w)
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /mcp?name=deaf HTTP/1.1\r\nHost: gateway\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", UpgradeProtocol)
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "\r\n" {
			break
		}
	}
	fmt.Fprintln(c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	testutil.Eventually(t, "deaf in the roster", func() bool { return w.listed("deaf") })
	go func() { // answers of a few MiB in all, none of them read
		for i := range 2000 {
			if _, err := fmt.Fprintf(c, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", i+2); err != nil {
				return
			}
		}
	}()
	testutil.EventuallyWithin(t, 10*time.Second, "deaf out of the roster", func() bool { return !w.listed("deaf") })
	closed := make(chan struct{})
	go func() { w.srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits on a client that does not read")
	}
}
