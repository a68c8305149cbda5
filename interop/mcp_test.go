package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/interop/qwencli"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/fakeopenai"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// mcpConfig writes the MCP server settings both CLIs read: the gateway as
// a stdio server, `gateway mcp --name NAME`, reaching the world's gateway.
func mcpConfig(t *testing.T, w *gatewaytest.World, name string) (path string, servers map[string]any) {
	t.Helper()
	servers = map[string]any{"gateway": map[string]any{
		"type": "stdio", "command": gatewaytest.Bin(t), "args": []string{"mcp", "--name", name, "--state-dir", w.StateDir},
	}}
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, servers
}

// replyFrom sends text from the fake Qwen session q to the session the
// Qwen side lists as name (the gateway's alias of it).
func replyFrom(t *testing.T, q *fakeqwen.Peer, name, text string) {
	t.Helper()
	var alias message.Session
	deadline := time.Now().Add(60 * time.Second)
	for alias.Address == "" {
		ss, _ := q.Sessions(context.Background())
		for _, s := range ss {
			if s.Name == name {
				alias = s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Qwen side never listed %s", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := q.Send(ctx, message.Message{ID: uuid.NewString(), To: alias.Address, ToName: alias.Name, ToSessionID: alias.SessionID,
		Body: text, Mode: message.ModePrompting, Unpaced: true})
	if err != nil || rc.Status == message.StatusFailed {
		t.Fatalf("the Qwen peer's answer: %+v %v", rc, err)
	}
}

// The real Claude Code CLI with the gateway as an MCP server: its model
// lists the sessions and sends to a Qwen peer, which sees the MCP
// session's name as sender; the peer's answer to that name is read back
// with wait_for_messages.
func TestARealClaudeSessionReachesAQwenPeerThroughTheGatewaysMCPServer(t *testing.T) {
	needInterop(t)
	w := gatewaytest.NewWorld(t)
	q := fakeqwen.Start(t, fakeqwen.Config{Name: "qwen-peer", Home: w.QwenHome, RuntimeDir: w.Runtime})
	body := "over-mcp-" + uuid.NewString()[:8]
	answer := "answer-" + uuid.NewString()[:8]
	send, read := "please-send-over-mcp", "please-read-over-mcp"
	model := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools(send, []fakeanthropic.Call{
			{Tool: "mcp__gateway__list_sessions", Input: `{}`},
			{Tool: "mcp__gateway__send_message", Input: fmt.Sprintf(`{"to":"qwen-peer","text":%q}`, body)},
		}, "sent"),
		fakeanthropic.CallTools(read, []fakeanthropic.Call{{Tool: "mcp__gateway__wait_for_messages", Input: `{"timeout_seconds":60}`}}, "read")))
	g := gatewaytest.Start(t, w, "gateway-it")
	cfg, _ := mcpConfig(t, w, "claude-mcp")
	cs := claudecli.Start(t, claudecli.Options{
		APIURL: model.URL(), Name: "work-it", ConfigDir: w.ConfigDir, XDGRuntimeDir: w.Runtime,
		Args: []string{"--mcp-config", cfg, "--strict-mcp-config", "--permission-mode", "bypassPermissions"}, Env: []string{"IS_SANDBOX=1"},
	})
	mcpSession := g.WaitListed(t, "claude-mcp")
	if mcpSession.Protocol != message.ProtocolMCP {
		t.Fatalf("claude-mcp listed as %+v", mcpSession)
	}
	if err := cs.SendUserTurn(send); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ev, err := q.Wait(ctx, 2*time.Minute, func(ev message.Event) bool {
		return ev.Type == message.EventMessage && ev.Message != nil && ev.Message.Body == body
	})
	if err != nil {
		t.Fatalf("the Qwen peer never got the message: %v", err)
	}
	if ev.Message.FromName != "claude-mcp" {
		t.Fatalf("the Qwen peer got it from %q, want claude-mcp", ev.Message.FromName)
	}
	// list_sessions' answer reached the model: it names the peer and the
	// MCP session itself.
	if _, err := model.WaitContains(ctx, `"protocol": "qwen"`); err != nil {
		t.Errorf("list_sessions' result never reached the model: %v", err)
	}

	replyFrom(t, q, "claude-mcp", answer)
	if err := cs.SendUserTurn(read); err != nil {
		t.Fatal(err)
	}
	req, err := model.WaitContains(ctx, answer)
	if err != nil {
		t.Fatalf("wait_for_messages never returned the peer's answer: %v", err)
	}
	if !strings.Contains(req.Text(), `"from": "qwen-peer"`) {
		t.Errorf("the answer is not from qwen-peer: %s", req.Text())
	}
}

// toolEndingIn calls, in turn, the offered tools whose names end in each of
// suffixes (the CLI decides how it prefixes an MCP server's tools), with
// the given arguments, on the newest user message containing trigger.
func toolEndingIn(trigger string, calls [][2]string, then string) fakeopenai.Rule {
	return func(req fakeopenai.Request) (fakeopenai.Reply, int, bool) {
		var specs []fakeopenai.FunctionCallSpec
		for _, c := range calls {
			for _, tl := range req.Tools {
				if strings.HasSuffix(tl.Function.Name, c[0]) {
					specs = append(specs, fakeopenai.FunctionCallSpec{Name: tl.Function.Name, Arguments: c[1]})
					break
				}
			}
		}
		if len(specs) != len(calls) {
			return fakeopenai.Reply{}, 0, false
		}
		return fakeopenai.CallTools(trigger, specs, then)(req)
	}
}

// The real Qwen Code CLI with the gateway in its MCP server settings does
// the same towards a fake Claude peer.
func TestARealQwenSessionReachesAClaudePeerThroughTheGatewaysMCPServer(t *testing.T) {
	needQwen(t)
	w := gatewaytest.NewWorld(t)
	peer := fakeclaude.Start(t, fakeclaude.Config{Name: "claude-peer", ConfigDir: w.ConfigDir, RuntimeDir: w.Runtime})
	body := "over-mcp-" + uuid.NewString()[:8]
	answer := "answer-" + uuid.NewString()[:8]
	send, read := "please-send-over-mcp", "please-read-over-mcp"
	model := fakeopenai.Start(t, fakeopenai.Rules(fakeopenai.Text("ok"),
		toolEndingIn(send, [][2]string{{"list_sessions", `{}`}, {"send_message", fmt.Sprintf(`{"to":"claude-peer","text":%q}`, body)}}, "sent"),
		toolEndingIn(read, [][2]string{{"wait_for_messages", `{"timeout_seconds":60}`}}, "read")))
	g := gatewaytest.Start(t, w, "gateway-it")
	_, servers := mcpConfig(t, w, "qwen-mcp")
	// Qwen Code keeps an MCP server's tools behind its tool_search bridge
	// unless the server is set to load them up front.
	servers["gateway"].(map[string]any)["alwaysLoadTools"] = true
	qs := qwencli.Start(t, qwencli.Options{APIURL: model.URL() + "/v1", QwenHome: w.QwenHome, XDGRuntimeDir: w.Runtime,
		ApprovalMode: qwencli.ModeYolo, Settings: map[string]any{"mcpServers": servers}})
	if s := g.WaitListed(t, "qwen-mcp"); s.Protocol != message.ProtocolMCP {
		t.Fatalf("qwen-mcp listed as %+v", s)
	}
	if err := qs.TypeTurn(send); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pctx, pcancel := context.WithTimeout(ctx, time.Minute)
	defer pcancel()
	got, err := peer.WaitReceived(pctx, func(r fakeclaude.Received) bool { return r.Content.Envelope.Body == body })
	if err != nil {
		var names []string
		for _, r := range model.Requests() {
			for _, tl := range r.Tools {
				names = append(names, tl.Function.Name)
			}
		}
		t.Fatalf("the Claude peer never got the message: %v; tools offered: %v", err, names)
	}
	if got.Content.Envelope.FromName != "qwen-mcp" {
		t.Fatalf("the Claude peer got it from %q, want qwen-mcp", got.Content.Envelope.FromName)
	}
	if _, err := model.WaitContains(ctx, "claude-peer"); err != nil {
		t.Errorf("list_sessions' result never reached the model: %v", err)
	}

	if _, err := peer.Send(ctx, got.Content.Envelope.From, answer, message.ModePrompting); err != nil {
		t.Fatal(err)
	}
	if err := qs.TypeTurn(read); err != nil {
		t.Fatal(err)
	}
	req, err := model.WaitContains(ctx, answer)
	if err != nil {
		t.Fatalf("wait_for_messages never returned the peer's answer: %v", err)
	}
	if !strings.Contains(req.Text(), "claude-peer") {
		t.Errorf("the answer is not from claude-peer: %s", req.Text())
	}
}
