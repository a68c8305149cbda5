// Package mcp_test runs `gateway mcp` processes against a running gateway:
// MCP clients listed by `gateway sessions`, messaging each other by name,
// and one that disconnects.
package mcp_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

func TestMain(m *testing.M) { os.Exit(gatewaytest.Main(m)) }

// client starts `gateway mcp --name name` and connects an SDK client to it.
func client(t *testing.T, w *gatewaytest.World, name string) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(gatewaytest.Bin(t), "mcp", "--name", name)
	cmd.Env = w.Env()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e"}, nil).Connect(testutil.Context(t, 30*time.Second), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any, out any) {
	t.Helper()
	res, err := cs.CallTool(testutil.Context(t, 90*time.Second), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if res.IsError {
		t.Fatalf("%s: %s", tool, text)
	}
	if err := json.Unmarshal([]byte(text), out); err != nil {
		t.Fatalf("%s: %v in %s", tool, err, text)
	}
}

type inbox struct {
	Messages []struct{ From, Text string }
}

type status struct {
	Status   string
	Receipts []message.Receipt
}

func TestTwoMCPClientsMessageEachOtherAndOneThatLeavesIsAnsweredSo(t *testing.T) {
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "gateway-e2e")
	alice := client(t, w, "alice")
	bob := client(t, w, "bob")
	if s := g.WaitListed(t, "alice"); s.Protocol != message.ProtocolMCP {
		t.Fatalf("gateway sessions lists alice as %+v", s)
	}
	g.WaitListed(t, "bob")

	var st status
	call(t, alice, "send_message", map[string]any{"to": "bob", "text": "hello bob"}, &st)
	var in inbox
	call(t, bob, "wait_for_messages", map[string]any{"timeout_seconds": 30}, &in)
	if len(in.Messages) != 1 || in.Messages[0].From != "alice" || in.Messages[0].Text != "hello bob" {
		t.Fatalf("bob read %+v", in)
	}
	call(t, bob, "send_message", map[string]any{"to": "alice", "text": "hi alice"}, &st)
	call(t, alice, "wait_for_messages", map[string]any{"timeout_seconds": 30}, &in)
	if len(in.Messages) != 1 || in.Messages[0].From != "bob" || in.Messages[0].Text != "hi alice" {
		t.Fatalf("alice read %+v", in)
	}

	if err := bob.Close(); err != nil { // bob's `gateway mcp` ends
		t.Fatal(err)
	}
	testutil.EventuallyWithin(t, 20*time.Second, "bob out of gateway sessions", func() bool {
		_, ok := gatewaytest.FindSession(g.Listed(t), "bob")
		return !ok
	})
	call(t, alice, "send_message", map[string]any{"to": "bob", "text": "still there?", "wait": true, "timeout_seconds": 30}, &st)
	if st.Status != "failed" || len(st.Receipts) == 0 || !strings.Contains(st.Receipts[len(st.Receipts)-1].Reason, "bob disconnected") {
		t.Fatalf("a message to bob after he left: %+v", st)
	}
}
