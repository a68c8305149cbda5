package interop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// `gateway run claude` starts the real Claude Code headless; its prompt is
// answered through the gateway, a message by name is its next turn, and
// a gateway killed with SIGKILL and started again resumes it with its
// history (docs/hosted.md).

// hostingGateway serves a gateway in w whose hosted sessions run the real
// CLI against model.
func hostingGateway(t *testing.T, w *gatewaytest.World, model *fakeanthropic.Server) *gatewaytest.Gateway {
	t.Helper()
	bin, err := claudecli.Bin()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gatewaytest.Bin(t), "serve", "--name", "gw-run", "--log-level", "debug", "--legs", "none", "--claude-path", bin)
	cmd.Env = append(w.Env(), "ANTHROPIC_API_KEY="+claudecli.DummyAPIKey, "ANTHROPIC_BASE_URL="+model.URL(),
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	return gatewaytest.StartCmd(t, w, "gw-run", cmd, 60*time.Second)
}

// saidInModel waits until the fake model was sent text.
func saidInModel(t *testing.T, model *fakeanthropic.Server, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := model.WaitContains(ctx, text); err != nil {
		t.Fatalf("the model was never sent %q: %v", text, err)
	}
}

func TestGatewayRunStartsARealClaudeCodeAndDrivesIt(t *testing.T) {
	needInterop(t)
	w := gatewaytest.NewWorld(t)
	model := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools("please-run", []fakeanthropic.Call{{Tool: "Bash", Input: hookBash}}, "finished"),
		fakeanthropic.CallTools("second-turn", nil, "second-answer")))
	g := hostingGateway(t, w, model)
	work := filepath.Join(w.Root, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	out, _, err := g.Run(t, "run", "claude", "--cwd", work, "--name", "builder", "--mode", "default", "--json", "please-run")
	if err != nil {
		t.Fatalf("gateway run: %v", err)
	}
	var s message.Session
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.Address != "hosted:builder" || s.Protocol != message.ProtocolHosted || s.Cwd != work {
		t.Fatalf("gateway run printed %s (%v)", out, err)
	}
	listed := g.WaitListed(t, "builder")
	if listed.Kind != "claude" || listed.SessionID == "" {
		t.Fatalf("listed as %+v", listed)
	}

	// The model asks for Bash: the prompt is the gateway's to answer.
	var p message.PermissionRequest
	deadline := time.Now().Add(60 * time.Second)
	for p.ID == "" && time.Now().Before(deadline) {
		for _, q := range prompts(t, g, false) {
			if q.Source == message.SourceHosted && q.Name == "builder" {
				p = q
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if p.ID == "" || p.ToolName != "Bash" {
		t.Fatalf("no hosted prompt; gateway logs:\n%s", g.Logs())
	}
	if _, _, err := g.Run(t, "allow", p.ID); err != nil {
		t.Fatal(err)
	}
	if text, isErr := waitToolResult(t, model, 30*time.Second); text != hookMarker || isErr {
		t.Fatalf("tool_result = %q (is_error %v), want the tool's output", text, isErr)
	}

	// A message by name is its next turn.
	if _, _, err := g.Run(t, "send", "builder", "second-turn"); err != nil {
		t.Fatal(err)
	}
	saidInModel(t, model, "second-turn")

	// Killed and started again, the gateway resumes it with its history.
	g.Kill(t)
	before := len(model.Requests())
	g2 := hostingGateway(t, w, model)
	g2.WaitListed(t, "builder")
	if _, _, err := g2.Run(t, "send", "builder", "after-restart"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := model.WaitRequest(ctx, func(r fakeanthropic.Request) bool { return r.Contains("after-restart") })
	if err != nil {
		t.Fatalf("the resumed session never asked the model: %v; logs:\n%s", err, g2.Logs())
	}
	if !req.Contains("please-run") || !req.Contains("second-turn") {
		t.Fatalf("the resumed session lost its history (%d requests before): %s", before, req.Text())
	}
	if out, _, err := g2.Run(t, "stop", "builder"); err != nil || !strings.Contains(out, "stopped builder") {
		t.Fatalf("gateway stop: %q, %v", out, err)
	}
}
