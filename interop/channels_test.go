package interop

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// channelHome is a HOME whose .claude.json has the channels feature flag
// cached, which the CLI reads with CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF=1
// (interop/FINDINGS-channels.md); the harness merges its own keys in.
func channelHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	b, _ := json.Marshal(map[string]any{"cachedGrowthBookFeatures": map[string]any{"tengu_harbor": true, "tengu_harbor_permissions": true}})
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// waitChannelPrompt waits for the gateway to list a pending prompt of
// source channel from the session named name.
func waitChannelPrompt(t *testing.T, g *gatewaytest.Gateway, name string, timeout time.Duration) message.PermissionRequest {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, _, _ := g.Run(t, "permissions", "--json")
		var ps []message.PermissionRequest
		_ = json.Unmarshal([]byte(out), &ps)
		for _, p := range ps {
			if p.Source == message.SourceChannel && p.Name == name {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no channel prompt of %s within %v; the gateway lists %s", name, timeout, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// channelSession is the real CLI in its TUI with `gateway mcp --name
// laptop` (and args) loaded as a development channel, offline, and its
// fake model, which calls Bash once on please-run.
func channelSession(t *testing.T, args ...string) (*gatewaytest.Gateway, *claudecli.Session, *fakeanthropic.Server) {
	t.Helper()
	needInterop(t)
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "gateway-ch")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"gateway": map[string]any{
		"type": "stdio", "command": gatewaytest.Bin(t), "args": append([]string{"mcp", "--name", "laptop", "--state-dir", w.StateDir}, args...)}}})
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	debug := filepath.Join(t.TempDir(), "debug.log")
	t.Cleanup(func() {
		if t.Failed() { // what the CLI said of the channel
			for _, l := range strings.Split(readFile(debug), "\n") {
				if strings.Contains(l, `MCP server "gateway"`) || strings.Contains(l, "permission_channel") {
					t.Log(l)
				}
			}
		}
	})
	model := fakeanthropic.Start(t, fakeanthropic.CallToolOnce("please-run", "Bash", hookBash, "finished"))
	s := claudecli.Start(t, claudecli.Options{
		APIURL: model.URL(), Mode: claudecli.ModeTUI, Home: channelHome(t), Confirm: "I am using this for local development",
		Env: []string{"CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF=1"},
		Args: []string{"--mcp-config", cfg, "--strict-mcp-config", "--permission-mode", "default",
			"--dangerously-load-development-channels", "server:gateway", "--debug-file", debug},
	})
	g.WaitListed(t, "laptop")
	return g, s, model
}

// A prompt of the real CLI is relayed through the channel as a pending
// prompt of source channel while its dialog shows; `gateway allow` runs
// the tool and `gateway deny` refuses it, as the dialog would have.
func TestARealSessionsPromptRelayedThroughTheChannelIsAnsweredFromTheGateway(t *testing.T) {
	for _, tt := range []struct {
		verb   string
		result string
		isErr  bool
	}{
		{"allow", hookMarker, false},
		{"deny", "", true},
	} {
		t.Run(tt.verb, func(t *testing.T) {
			g, s, model := channelSession(t)
			if err := s.SendUserTurn("please-run"); err != nil {
				t.Fatal(err)
			}
			waitClaudeScreen(t, s, dialog, true, 30*time.Second)
			p := waitChannelPrompt(t, g, "laptop", 15*time.Second)
			t.Logf("relayed: request_id %q tool %q description %q input %q", p.RequestID, p.ToolName, p.Description, p.Input)
			if p.ToolName != "Bash" || len(p.RequestID) != 5 || !strings.Contains(string(p.Input), "hook-ran-7f3a") {
				t.Errorf("the relayed prompt is %+v", p)
			}
			if out, code, err := g.Run(t, tt.verb, p.ID); err != nil || code != 0 {
				t.Fatalf("gateway %s %s: %d %v %s", tt.verb, p.ID, code, err, out)
			}
			text, isErr := waitToolResult(t, model, 20*time.Second)
			if isErr != tt.isErr || (tt.result != "" && text != tt.result) {
				t.Errorf("tool_result = %q (is_error %v)", text, isErr)
			}
			t.Logf("tool_result: %q (is_error %v)", text, isErr)
			waitClaudeScreen(t, s, dialog, false, 10*time.Second)
		})
	}
}

// With --channel, a message sent to the channel's name is pushed into the
// session: its model is sent it as a turn.
func TestARealSessionGetsAMessageSentToItsChannelAsATurn(t *testing.T) {
	g, _, model := channelSession(t, "--channel")
	marker := "channel-push-5c1e"
	if out, code, err := g.Run(t, "send", "laptop", marker); err != nil || code != 0 {
		t.Fatalf("gateway send: %d %v %s", code, err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := model.WaitContains(ctx, marker)
	if err != nil {
		t.Fatalf("the model was never sent the channel's message: %v", err)
	}
	t.Logf("the model got: %q", req.Text())
}
