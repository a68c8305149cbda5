package mcp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	mcpleg "github.com/sessiongateway/gateway/leg/mcp"
	"github.com/sessiongateway/gateway/message"
)

// rawClient is `gateway mcp` with JSON-RPC lines written and read by the
// test, as Claude Code would.
type rawClient struct {
	t     *testing.T
	in    io.WriteCloser
	lines *bufio.Scanner
}

func (w *world) stdio(t *testing.T, opt StdioOptions) *rawClient {
	t.Helper()
	sock := serveAPI(t, w)
	ctx := testutil.Context(t, 30*time.Second)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { _ = Stdio(ctx, api.NewUnixClient(sock), opt, inR, outW); _ = outW.Close() }()
	t.Cleanup(func() { _ = inW.Close() })
	c := &rawClient{t: t, in: inW, lines: bufio.NewScanner(outR)}
	c.lines.Buffer(nil, 1<<20)
	return c
}

func (c *rawClient) write(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, s+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// next reads the next line the server writes.
func (c *rawClient) next() map[string]any {
	c.t.Helper()
	if !c.lines.Scan() {
		c.t.Fatalf("no line from the server: %v", c.lines.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(c.lines.Bytes(), &m); err != nil {
		c.t.Fatalf("line %q: %v", c.lines.Text(), err)
	}
	return m
}

// initialize runs the handshake and returns the server's capabilities.
func (c *rawClient) initialize() map[string]any {
	c.t.Helper()
	c.write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true},"elicitation":{}},"clientInfo":{"name":"claude-code","version":"2.1.332"}}}`)
	m := c.next()
	res, _ := m["result"].(map[string]any)
	if res == nil {
		c.t.Fatalf("initialize: %v", m)
	}
	c.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	caps, _ := res["capabilities"].(map[string]any)
	return caps
}

func (c *rawClient) relay(requestID, tool, preview string) {
	c.t.Helper()
	params, _ := json.Marshal(map[string]string{"request_id": requestID, "tool_name": tool, "description": "Run " + tool, "input_preview": preview})
	c.write(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s}`, MethodPermissionRequest, params))
}

// pending is the pending prompt of the session named name with requestID.
func (w *world) pending(name, requestID string) (message.PermissionRequest, bool) {
	for _, p := range w.rt.Permissions() {
		if p.Name == name && p.RequestID == requestID {
			return p, true
		}
	}
	return message.PermissionRequest{}, false
}

func TestAStdioClientIsToldTheServerIsAChannelWithAPermissionRelay(t *testing.T) {
	w := newWorld(t)
	caps := w.stdio(t, StdioOptions{Name: "laptop"}).initialize()
	exp, _ := caps["experimental"].(map[string]any)
	if _, ok := exp[CapChannel]; !ok {
		t.Errorf("no %s in %v", CapChannel, caps)
	}
	if _, ok := exp[CapChannelPermission]; !ok {
		t.Errorf("no %s in %v", CapChannelPermission, caps)
	}
	if _, ok := caps["logging"]; !ok {
		t.Errorf("logging is gone from %v", caps)
	}
	if _, ok := caps["tools"]; !ok {
		t.Errorf("tools are gone from %v", caps)
	}
}

func TestARelayedPermissionRequestIsAPendingPromptAnsweredOverTheChannel(t *testing.T) {
	w := newWorld(t)
	c := w.stdio(t, StdioOptions{Name: "laptop"})
	c.initialize()
	testutil.Eventually(t, "laptop in the roster", func() bool { return w.listed("laptop") })
	c.relay("abcde", "Bash", "{\n  \"command\": \"make deploy\"\n}")
	var p message.PermissionRequest
	testutil.Eventually(t, "the prompt is pending", func() (ok bool) { p, ok = w.pending("laptop", "abcde"); return ok })
	if p.Source != message.SourceChannel || p.Leg != message.ProtocolMCP || p.ToolName != "Bash" || p.Description != "Run Bash" ||
		string(p.Input) != `{"command":"make deploy"}` || !strings.HasPrefix(p.Address, mcpleg.AddressPrefix) {
		t.Fatalf("the prompt is %+v", p)
	}

	refused := []struct {
		name string
		a    message.PermissionAnswer
	}{
		{"an allow with updated input", message.PermissionAnswer{Behavior: message.BehaviorAllow, UpdatedInput: json.RawMessage(`{"command":"make"}`)}},
		{"an always-allow rule", message.PermissionAnswer{Behavior: message.BehaviorAllow, Rules: []message.PermissionRule{{ToolName: "Bash"}}}},
		{"a mode switch", message.PermissionAnswer{Behavior: message.BehaviorAllow, Mode: "acceptEdits"}},
		{"a deny with a message", message.PermissionAnswer{Behavior: message.BehaviorDeny, Message: "not today"}},
	}
	for _, tt := range refused {
		_, err := w.rt.AnswerPermission(testutil.Context(t, 10*time.Second), p.ID, tt.a)
		var ia *message.InvalidAnswerError
		if !errors.As(err, &ia) || ia.Problem != message.AnswerNotCarried {
			t.Errorf("%s: %v, want it refused as not carried", tt.name, err)
		}
	}

	got, err := w.rt.AnswerPermission(testutil.Context(t, 10*time.Second), p.ID, message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "token:phone"})
	if err != nil || got.State != message.PermissionAnswered || got.AnsweredBy != "token:phone" {
		t.Fatalf("allow: %+v, %v", got, err)
	}
	m := c.next()
	params, _ := m["params"].(map[string]any)
	if m["method"] != MethodPermission || m["id"] != nil || params["request_id"] != "abcde" || params["behavior"] != "allow" || len(params) != 2 {
		t.Fatalf("the channel got %v", m)
	}
}

func TestRelayedRequestsPastTheCapOrMalformedAreRefusedAndCounted(t *testing.T) {
	w := newWorld(t)
	var drops atomic.Int64
	w.srv.cfg.Drop = func(reason string) {
		if reason == DropChannelPrompt {
			drops.Add(1)
		}
	}
	c := w.stdio(t, StdioOptions{Name: "busy"})
	c.relay("early", "Bash", "{}") // before initialize
	c.initialize()
	testutil.Eventually(t, "busy in the roster", func() bool { return w.listed("busy") })
	for i := range mcpleg.MaxPromptsPerClient + 1 {
		c.relay(fmt.Sprintf("r%02d", i), "Bash", "{}")
	}
	c.relay("r00", "Bash", "{}")                                                         // a request id already waiting
	c.relay("", "Bash", "{}")                                                            // no request id
	c.write(`{"jsonrpc":"2.0","method":"` + MethodPermissionRequest + `","params":[1]}`) // not an object
	// A call after the notifications is answered after them: they are handled in order.
	c.write(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := c.next(); m["id"] != float64(2) {
		t.Fatalf("tools/list got %v", m)
	}
	if n := len(w.rt.Permissions()); n != mcpleg.MaxPromptsPerClient {
		t.Fatalf("%d prompts pending, want %d", n, mcpleg.MaxPromptsPerClient)
	}
	if _, ok := w.pending("busy", "early"); ok {
		t.Fatal("a request before initialize is pending")
	}
	if n := drops.Load(); n != 5 {
		t.Fatalf("%d refusals counted, want 5 (before initialize, over the cap, repeated id, no id, not an object)", n)
	}
}

func TestThePromptsOfAClientThatLeavesAreWithdrawn(t *testing.T) {
	w := newWorld(t)
	c := w.stdio(t, StdioOptions{Name: "gone"})
	c.initialize()
	testutil.Eventually(t, "gone in the roster", func() bool { return w.listed("gone") })
	c.relay("qwert", "Write", `{"file_path":"/etc/hosts"}`)
	var p message.PermissionRequest
	testutil.Eventually(t, "the prompt is pending", func() (ok bool) { p, ok = w.pending("gone", "qwert"); return ok })
	_ = c.in.Close()
	testutil.Eventually(t, "the prompt is withdrawn", func() bool {
		got, err := w.rt.Permission(p.ID)
		return err == nil && got.State == message.PermissionCancelled
	})
	_, err := w.rt.AnswerPermission(testutil.Context(t, 10*time.Second), p.ID, message.PermissionAnswer{Behavior: message.BehaviorAllow})
	if !errors.Is(err, message.ErrPermissionSettled) {
		t.Fatalf("answering a withdrawn prompt: %v", err)
	}
}

func TestAChannelClientGetsWhatOthersSendItAsChannelMessages(t *testing.T) {
	w := newWorld(t)
	c := w.stdio(t, StdioOptions{Name: "laptop", Channel: true})
	c.initialize()
	testutil.Eventually(t, "laptop in the roster", func() bool { return w.listed("laptop") })
	alice := w.connect(t, "alice", api.AllScopes)
	var st Status
	mustCall(t, alice, "send_message", map[string]any{"to": "laptop", "text": "the build is green"}, &st)
	m := c.next()
	params, _ := m["params"].(map[string]any)
	meta, _ := params["meta"].(map[string]any)
	if m["method"] != MethodChannel || params["content"] != "the build is green" || meta["from"] != "alice" || meta["message_id"] == nil {
		t.Fatalf("the channel got %v", m)
	}
	testutil.Eventually(t, "alice hears it was delivered", func() bool {
		mustCall(t, alice, "get_message_status", map[string]any{"id": st.ID}, &st)
		return st.Status == "delivered"
	})
}
