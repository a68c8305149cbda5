package mcp

import (
	"io"
	"net"
	"path/filepath"
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
	sock := filepath.Join(testutil.ShortTempDir(t), "gateway.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := api.NewHTTPServer(api.NewServer(api.Config{Router: w.rt, MCP: w.srv.Handler()}).Handler())
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })

	ctx := testutil.Context(t, 30*time.Second)
	inR, inW := io.Pipe()   // the agent writes, Stdio reads (its stdin)
	outR, outW := io.Pipe() // Stdio writes (its stdout), the agent reads
	done := make(chan error, 1)
	go func() { done <- Stdio(ctx, api.NewUnixClient(sock), "stdio-agent", inR, outW); _ = outW.Close() }()

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
