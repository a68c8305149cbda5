package interop

import (
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
	"github.com/sessiongateway/gateway/testkit/natscluster"
)

// The gateway's hooks, installed by `gateway hooks install` into the
// World's Claude Code settings, bring a real session's prompt to the
// gateway, where it is answered (docs/protocols/claude-hooks.md).

// hookedGateway is a gateway with its hooks installed in w's settings.
func hookedGateway(t *testing.T, w *gatewaytest.World, name string, args ...string) *gatewaytest.Gateway {
	t.Helper()
	g := gatewaytest.Start(t, w, name, append([]string{"--local-prompt-wait", "3m"}, args...)...)
	if out, _, err := g.Run(t, "hooks", "install"); err != nil || !strings.Contains(out, filepath.Join(w.ConfigDir, "settings.json")) {
		t.Fatalf("hooks install: %q, %v", out, err)
	}
	return g
}

func startWorldSession(t *testing.T, w *gatewaytest.World, mode, name string) (*claudecli.Session, *fakeanthropic.Server) {
	t.Helper()
	model := fakeanthropic.Start(t, fakeanthropic.CallToolOnce("please-run", "Bash", hookBash, "finished"))
	s := claudecli.Start(t, claudecli.Options{
		APIURL: model.URL(), Mode: mode, Name: name, ConfigDir: w.ConfigDir, XDGRuntimeDir: w.Runtime,
		Args: []string{"--permission-mode", "default"}, // see startHooked
	})
	if err := s.SendUserTurn("please-run"); err != nil {
		t.Fatal(err)
	}
	return s, model
}

// prompts is what `gateway permissions --json` (with --all: the settled
// ones too) lists.
func prompts(t *testing.T, g *gatewaytest.Gateway, all bool) []message.PermissionRequest {
	t.Helper()
	args := []string{"permissions", "--json"}
	if all {
		args = append(args, "--all")
	}
	out, _, err := g.Run(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	var ps []message.PermissionRequest
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		t.Fatalf("permissions --json: %v: %s", err, out)
	}
	return ps
}

// waitHookPrompt waits until g lists a pending hook prompt of session s.
func waitHookPrompt(t *testing.T, g *gatewaytest.Gateway, s *claudecli.Session) message.PermissionRequest {
	t.Helper()
	p := pendingPrompt(t, g, 60*time.Second, func(p message.PermissionRequest) bool {
		return p.Source == message.SourceHook && p.SessionID == s.SessionID()
	})
	if p.ID == "" {
		t.Fatalf("no hook prompt of %s listed; gateway logs:\n%s", s.SessionID(), g.Logs())
	}
	return p
}

// settled waits until g's prompt id is settled and returns it.
func settled(t *testing.T, g *gatewaytest.Gateway, id string) message.PermissionRequest {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range prompts(t, g, true) {
			if p.ID == id && p.State != message.PermissionPending {
				return p
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("prompt %s never settled: %+v", id, prompts(t, g, true))
	return message.PermissionRequest{}
}

func TestTheGatewaysHooksBringARealSessionsPromptToTheGateway(t *testing.T) {
	t.Run("gateway allow runs the tool", func(t *testing.T) {
		needInterop(t)
		w := gatewaytest.NewWorld(t)
		g := hookedGateway(t, w, "gw-h")
		s, model := startWorldSession(t, w, claudecli.ModeStreamJSON, "work-h")
		p := waitHookPrompt(t, g, s)
		if p.ToolName != "Bash" || !strings.Contains(string(p.Input), hookMarker) || len(p.Suggestions) == 0 {
			t.Fatalf("prompt %+v", p)
		}
		if _, _, err := g.Run(t, "allow", p.ID); err != nil {
			t.Fatal(err)
		}
		if text, isErr := waitToolResult(t, model, 30*time.Second); text != hookMarker || isErr {
			t.Fatalf("tool_result = %q (is_error %v), want the tool's output", text, isErr)
		}
		if got := settled(t, g, p.ID); got.State != message.PermissionAnswered || got.AnsweredBy != "socket:cli" {
			t.Fatalf("settled as %s by %q", got.State, got.AnsweredBy)
		}
	})
	t.Run("gateway deny --message refuses it with that message", func(t *testing.T) {
		needInterop(t)
		w := gatewaytest.NewWorld(t)
		g := hookedGateway(t, w, "gw-h")
		s, model := startWorldSession(t, w, claudecli.ModeStreamJSON, "work-h")
		p := waitHookPrompt(t, g, s)
		if _, _, err := g.Run(t, "deny", p.ID, "--message", "not-today-58"); err != nil {
			t.Fatal(err)
		}
		if text, isErr := waitToolResult(t, model, 30*time.Second); text != "not-today-58" || !isErr {
			t.Fatalf("tool_result = %q (is_error %v), want the deny's message", text, isErr)
		}
	})
	t.Run("answered at the terminal instead, the gateway's prompt is settled", func(t *testing.T) {
		needInterop(t)
		w := gatewaytest.NewWorld(t)
		g := hookedGateway(t, w, "gw-h")
		s, model := startWorldSession(t, w, claudecli.ModeTUI, "work-t")
		p := waitHookPrompt(t, g, s)
		if p.Name != "work-t" {
			t.Errorf("a TUI session's prompt is named %q, want its registry name", p.Name)
		}
		waitClaudeScreen(t, s, dialog, true, 15*time.Second)
		time.Sleep(1500 * time.Millisecond)     // a key pressed as the dialog first draws is lost
		if err := s.Keys("Enter"); err != nil { // "1. Yes"
			t.Fatal(err)
		}
		if text, isErr := waitToolResult(t, model, 20*time.Second); text != hookMarker || isErr {
			t.Fatalf("tool_result = %q (is_error %v)", text, isErr)
		}
		got := settled(t, g, p.ID)
		if got.State != message.PermissionAnswered || got.AnsweredBy != "terminal" {
			t.Fatalf("settled as %s by %q, want answered at the terminal", got.State, got.AnsweredBy)
		}
		if _, code, err := g.Run(t, "allow", p.ID); err == nil || code == 0 {
			t.Fatal("an answer after the terminal's was taken")
		}
	})
	t.Run("with the gateway stopped the terminal asks", func(t *testing.T) {
		needInterop(t)
		w := gatewaytest.NewWorld(t)
		g := hookedGateway(t, w, "gw-h")
		g.Stop(t)
		s, model := startWorldSession(t, w, claudecli.ModeTUI, "work-s")
		waitClaudeScreen(t, s, dialog, true, 15*time.Second)
		time.Sleep(3 * time.Second) // the hook, finding no gateway, is done within 2 s
		if _, _, ok := toolResult(model); ok {
			t.Fatal("the tool was decided without the person")
		}
		waitClaudeScreen(t, s, dialog, true, time.Second) // still asking
		if err := s.Keys("Enter"); err != nil {
			t.Fatal(err)
		}
		if text, isErr := waitToolResult(t, model, 20*time.Second); text != hookMarker || isErr {
			t.Fatalf("tool_result = %q (is_error %v): the person's own answer must run it", text, isErr)
		}
		b, err := os.ReadFile(filepath.Join(w.ConfigDir, "settings.json"))
		if err != nil || !strings.Contains(string(b), "hook PermissionRequest") {
			t.Fatalf("the hooks are not installed: %s, %v", b, err)
		}
	})
}

// Two hosts on a real three-node NATS cluster: a real session's prompt on
// host a, brought by the hooks, is listed on host b with its host and
// answered there; the tool runs on a, and the prompt is settled once, on
// both hosts, as b's answer.
func TestARealSessionsHookPromptIsAnsweredFromAnotherHost(t *testing.T) {
	needInterop(t)
	c := natscluster.Start(t, natscluster.Options{Nodes: 3})
	wa, wb := gatewaytest.NewWorld(t), gatewaytest.NewWorld(t)
	ga := hookedGateway(t, wa, "gw-a", "--federation", c.URLs(), "--host", "a")
	gb := gatewaytest.Start(t, wb, "gw-b", "--federation", c.URL(1)+","+c.URL(2), "--host", "b")
	s, model := startWorldSession(t, wa, claudecli.ModeStreamJSON, "work-a")
	p := waitHookPrompt(t, ga, s)

	var onB message.PermissionRequest
	deadline := time.Now().Add(30 * time.Second)
	for onB.ID == "" && time.Now().Before(deadline) {
		for _, q := range prompts(t, gb, false) {
			if q.ID == p.ID {
				onB = q
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if onB.Host != "a" || onB.Source != message.SourceHook || onB.SessionID != s.SessionID() {
		t.Fatalf("b lists the prompt as %+v, want a's hook prompt with its host", onB)
	}
	if _, _, err := gb.Run(t, "allow", p.ID); err != nil {
		t.Fatal(err)
	}
	if text, isErr := waitToolResult(t, model, 30*time.Second); text != hookMarker || isErr {
		t.Fatalf("tool_result = %q (is_error %v), want the tool's output", text, isErr)
	}
	got := settled(t, ga, p.ID)
	if got.State != message.PermissionAnswered || got.AnsweredBy != "socket:cli on host b" {
		t.Fatalf("a settled it as %s by %q, want b's answer", got.State, got.AnsweredBy)
	}
	n := 0
	for _, q := range prompts(t, ga, true) {
		if q.RequestID == p.RequestID {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("a lists the prompt %d times", n)
	}
	if _, code, err := gb.Run(t, "allow", p.ID); err == nil || code == 0 {
		t.Fatal("a second answer from b was taken")
	}
}
