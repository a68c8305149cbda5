package interop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/interop/qwencli"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
	"github.com/sessiongateway/gateway/testkit/fakeopenai"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
	"github.com/sessiongateway/gateway/testkit/natscluster"
)

// `gateway run claude` starts the real Claude Code headless; its prompt is
// answered through the gateway, a message by name is its next turn, and
// a gateway killed with SIGKILL and started again resumes it with its
// history (docs/hosted.md).

// hostingGateway serves a gateway in w whose hosted sessions run the real
// CLI against model.
func hostingGateway(t *testing.T, w *gatewaytest.World, model *fakeanthropic.Server, args ...string) *gatewaytest.Gateway {
	t.Helper()
	bin, err := claudecli.Bin()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gatewaytest.Bin(t), append([]string{"serve", "--name", "gw-run", "--log-level", "debug", "--legs", "none", "--claude-path", bin}, args...)...)
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
	p := pendingPrompt(t, g, 60*time.Second, func(q message.PermissionRequest) bool { return q.Source == message.SourceHosted && q.Name == "builder" })
	if p.ID == "" || p.ToolName != "Bash" {
		t.Fatalf("no hosted prompt; gateway logs:\n%s", g.Logs())
	}
	if _, _, err := g.Run(t, "allow", p.ID); err != nil {
		t.Fatal(err)
	}
	if text, isErr := waitToolResult(t, model, 30*time.Second); text != hookMarker || isErr {
		t.Fatalf("tool_result = %q (is_error %v), want the tool's output", text, isErr)
	}

	// A message by name is its next turn, delivered once the CLI took it.
	if o, _ := g.SendJSON(t, "builder", "second-turn", "--wait"); o.Status != message.StatusDelivered {
		t.Fatalf("the second turn: %v %+v", o.Status, o.Receipts)
	}
	saidInModel(t, model, "second-turn")
	// An interrupt ends a turn: one waiting on a prompt withdraws it.
	if _, _, err := g.Run(t, "send", "hosted:builder", "please-run again"); err != nil {
		t.Fatal(err)
	}
	again := pendingPrompt(t, g, 60*time.Second, func(q message.PermissionRequest) bool { return q.Source == message.SourceHosted && q.ID != p.ID })
	if again.ID == "" {
		t.Fatal("the third turn raised no prompt")
	}
	if out, _, err := g.Run(t, "remote", "interrupt", "hosted:builder"); err != nil {
		t.Fatalf("interrupt: %q, %v", out, err)
	}
	if got := settled(t, g, again.ID); got.State != message.PermissionCancelled {
		t.Fatalf("after the interrupt the prompt is %s, want withdrawn", got.State)
	}

	// Killed and started again, the gateway resumes it with its history.
	g.Kill(t)
	gone := time.Now().Add(10 * time.Second)
	for syscall.Kill(listed.PID, 0) == nil {
		if time.Now().After(gone) {
			t.Fatalf("the CLI (pid %d) outlived the gateway killed with SIGKILL", listed.PID)
		}
		time.Sleep(100 * time.Millisecond)
	}
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

// `gateway run qwen` does the same with the real Qwen Code: it is sent
// initialize first (or it never asks), its prompt is answered through the
// gateway and the tool runs, and a message by name is its next turn.
func TestGatewayRunStartsARealQwenCodeAndDrivesIt(t *testing.T) {
	bin := needQwen(t)
	w := gatewaytest.NewWorld(t)
	cmdJSON := `{"command":"python3 -c \"print('ran-' + 'q7f3a')\"","description":"print a marker"}`
	fo := fakeopenai.Start(t, fakeopenai.Rules(fakeopenai.Text("ok"),
		fakeopenai.CallTools("qwen-run", []fakeopenai.FunctionCallSpec{{Name: "run_shell_command", Arguments: cmdJSON}}, "tool-done"),
		fakeopenai.CallTools("qwen-second", nil, "second-done")))
	settings := `{"security":{"auth":{"selectedType":"openai"}},"model":{"name":"fake-model"},"privacy":{"usageStatisticsEnabled":false},"general":{"enableAutoUpdate":false},"telemetry":{"enabled":false}}`
	if err := os.WriteFile(filepath.Join(w.QwenHome, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func() *gatewaytest.Gateway {
		cmd := exec.Command(gatewaytest.Bin(t), "serve", "--name", "gw-runq", "--log-level", "debug", "--legs", "none", "--qwen-path", bin)
		cmd.Env = append(w.Env(), "OPENAI_API_KEY="+qwencli.DummyAPIKey, "OPENAI_BASE_URL="+fo.BaseURL())
		return gatewaytest.StartCmd(t, w, "gw-runq", cmd, 60*time.Second)
	}
	g := serve()
	work := filepath.Join(w.Root, "qwork")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Run(t, "run", "qwen", "--cwd", work, "--name", "qbuilder", "--mode", "default", "qwen-run"); err != nil {
		t.Fatal(err)
	}
	p := pendingPrompt(t, g, 90*time.Second, func(q message.PermissionRequest) bool {
		return q.Source == message.SourceHosted && q.Name == "qbuilder"
	})
	if p.ID == "" || p.ToolName != "run_shell_command" {
		t.Fatalf("no hosted prompt of Qwen Code (%+v); gateway logs:\n%s", p, g.Logs())
	}
	if _, _, err := g.Run(t, "allow", p.ID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := fo.WaitContains(ctx, "ran-q7f3a"); err != nil {
		t.Fatalf("the tool's output never reached the model: %v", err)
	}
	if o, _ := g.SendJSON(t, "qbuilder", "qwen-second", "--wait", "--timeout", "60s"); o.Status != message.StatusDelivered {
		t.Fatalf("the second turn: %v %+v", o.Status, o.Receipts)
	}
	if _, err := fo.WaitContains(ctx, "qwen-second"); err != nil {
		t.Fatalf("the second turn never reached the model: %v", err)
	}

	// An interrupt ends a turn waiting on a prompt, and the prompt with it.
	if _, _, err := g.Run(t, "send", "hosted:qbuilder", "qwen-run again"); err != nil {
		t.Fatal(err)
	}
	again := pendingPrompt(t, g, 90*time.Second, func(q message.PermissionRequest) bool { return q.Source == message.SourceHosted && q.ID != p.ID })
	if again.ID == "" {
		t.Fatal("the third turn raised no prompt")
	}
	if out, _, err := g.Run(t, "remote", "interrupt", "hosted:qbuilder"); err != nil {
		t.Fatalf("interrupt: %q, %v", out, err)
	}
	if got := settled(t, g, again.ID); got.State != message.PermissionCancelled {
		t.Fatalf("after the interrupt the prompt is %s, want withdrawn", got.State)
	}

	// Killed and started again, the gateway resumes it with its history.
	g.Kill(t)
	g2 := serve()
	g2.WaitListed(t, "qbuilder")
	if o, _ := g2.SendJSON(t, "qbuilder", "qwen-after-restart", "--wait", "--timeout", "90s"); o.Status != message.StatusDelivered {
		t.Fatalf("a turn after the restart: %v %+v; logs:\n%s", o.Status, o.Receipts, g2.Logs())
	}
	req, err := fo.WaitContains(ctx, "qwen-after-restart")
	if err != nil {
		t.Fatalf("the resumed session never asked the model: %v", err)
	}
	if !req.Contains("qwen-second") {
		t.Fatalf("the resumed session lost its history: %s", req.Text())
	}
}

// A hosted session on host a takes a turn sent by name from host b, over
// a real NATS cluster, and its prompt is answered from b.
func TestAHostedSessionIsDrivenFromAnotherHost(t *testing.T) {
	needInterop(t)
	c := natscluster.Start(t, natscluster.Options{Nodes: 3})
	wa, wb := gatewaytest.NewWorld(t), gatewaytest.NewWorld(t)
	model := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools("from-b", []fakeanthropic.Call{{Tool: "Bash", Input: hookBash}}, "done-for-b")))
	ga := hostingGateway(t, wa, model, "--federation", c.URLs(), "--host", "a")
	gb := gatewaytest.Start(t, wb, "gw-b", "--legs", "none", "--federation", c.URL(1)+","+c.URL(2), "--host", "b")
	work := filepath.Join(wa.Root, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ga.Run(t, "run", "claude", "--cwd", work, "--name", "farbuild", "--mode", "default"); err != nil {
		t.Fatal(err)
	}
	far := gb.WaitListed(t, "farbuild.a")
	if far.Host != "a" {
		t.Fatalf("b lists it as %+v", far)
	}
	if o, _ := gb.SendJSON(t, "farbuild@a", "from-b", "--wait", "--timeout", "60s"); o.Status != message.StatusDelivered {
		t.Fatalf("a turn from b: %v %+v", o.Status, o.Receipts)
	}
	p := pendingPrompt(t, gb, 60*time.Second, func(q message.PermissionRequest) bool { return q.Host == "a" && q.Name == "farbuild" })
	if p.ID == "" {
		t.Fatalf("b never listed the hosted session's prompt; a's logs:\n%s", ga.Logs())
	}
	if _, _, err := gb.Run(t, "allow", p.ID); err != nil {
		t.Fatal(err)
	}
	if text, isErr := waitToolResult(t, model, 30*time.Second); text != hookMarker || isErr {
		t.Fatalf("tool_result = %q (is_error %v)", text, isErr)
	}
}

// pendingPrompt waits up to within for a pending prompt of g that match
// takes; the zero prompt when none came.
func pendingPrompt(t *testing.T, g *gatewaytest.Gateway, within time.Duration, match func(message.PermissionRequest) bool) message.PermissionRequest {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, q := range prompts(t, g, false) {
			if match(q) {
				return q
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return message.PermissionRequest{}
}
