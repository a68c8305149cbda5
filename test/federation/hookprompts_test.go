package federation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// Prompts of local Claude Code sessions, raised by their PermissionRequest
// hook (`gateway hook`), answered from another host.

// hookSession registers, in host h's Claude config, a session named name
// run by the test's own process: a `gateway hook` the test runs is its
// child, as a real hook is the session's (through a shell), so the hook
// endpoint finds the session's name. The entry has no peer socket: the
// session is no peer of the gateway's, only its hooks are.
func (h *host) hookSession(t *testing.T, name string) string {
	t.Helper()
	sid := uuid.NewString()
	dir := filepath.Join(h.W.ConfigDir, "sessions")
	if err := safefile.EnsureDir(dir); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(os.Getpid())
	entry := `{"pid":` + pid + `,"sessionId":"` + sid + `","cwd":"/srv/app","name":"` + name + `","kind":"interactive","entrypoint":"cli"}`
	if err := os.WriteFile(filepath.Join(dir, pid+".json"), []byte(entry), 0o600); err != nil {
		t.Fatal(err)
	}
	return sid
}

// hookRun is a `gateway hook PermissionRequest` on a host: the binary, as
// Claude Code runs it.
type hookRun struct {
	out, errOut bytes.Buffer
	err         error
	done        chan struct{}
}

// permissionHook runs the hook with the input Claude Code 2.1.332 gives a
// Bash prompt of session sid (interop/FINDINGS-hooks.md), for command.
func (h *host) permissionHook(t *testing.T, sid, command string) *hookRun {
	t.Helper()
	in, _ := json.Marshal(map[string]any{
		"session_id": sid, "transcript_path": "/tmp/t/" + sid + ".jsonl", "cwd": "/srv/app", "prompt_id": uuid.NewString(),
		"permission_mode": "default", "effort": map[string]string{"level": "medium"}, "hook_event_name": "PermissionRequest",
		"tool_name": "Bash", "tool_input": map[string]string{"command": command, "description": "run it"},
		"permission_suggestions": []any{map[string]any{"type": "addRules", "behavior": "allow", "destination": "localSettings",
			"rules": []any{map[string]string{"toolName": "Bash", "ruleContent": command}}}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, gatewaytest.Bin(t), "hook", "PermissionRequest")
	cmd.Env = h.W.Env()
	run := &hookRun{done: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &run.out, &run.errOut
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { defer close(run.done); defer cancel(); run.err = cmd.Wait() }()
	t.Cleanup(func() { cancel(); <-run.done })
	return run
}

// decision is the one decision the hook printed, once it has ended.
func (run *hookRun) decision(t *testing.T) map[string]any {
	t.Helper()
	select {
	case <-run.done:
	case <-time.After(90 * time.Second):
		t.Fatal("the hook never ended")
	}
	lines := strings.Split(strings.TrimSpace(run.out.String()), "\n")
	var out struct {
		HookSpecificOutput struct {
			HookEventName string         `json:"hookEventName"`
			Decision      map[string]any `json:"decision"`
		} `json:"hookSpecificOutput"`
	}
	if run.err != nil || len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &out) != nil ||
		out.HookSpecificOutput.HookEventName != "PermissionRequest" {
		t.Fatalf("the hook printed %q (%v, stderr %q), want one decision", run.out.String(), run.err, run.errOut.String())
	}
	return out.HookSpecificOutput.Decision
}

// hookPrompt waits until h lists the pending hook prompt of session sid
// asking for command.
func (h *host) hookPrompt(t *testing.T, sid, command string) message.PermissionRequest {
	t.Helper()
	var got message.PermissionRequest
	testutil.EventuallyWithin(t, 60*time.Second, h.Name+" lists the prompt for "+command, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ps, err := h.G.Permissions(ctx, false)
		if err != nil {
			return false
		}
		for _, p := range ps {
			var in struct{ Command string }
			if p.SessionID == sid && json.Unmarshal(p.Input, &in) == nil && in.Command == command {
				got = p
				return true
			}
		}
		return false
	})
	return got
}

// mint adds a token with scopes on h and returns it with its id.
func (h *host) mint(t *testing.T, label, scopes string) (token, id string) {
	t.Helper()
	out, _, err := h.G.Run(t, "tokens", "add", "--label", label, "--scope", scopes)
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := h.G.Run(t, "tokens", "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ts []struct{ ID, Label string }
	if err := json.Unmarshal([]byte(list), &ts); err != nil {
		t.Fatalf("tokens list --json printed %q: %v", list, err)
	}
	for _, tk := range ts {
		if tk.Label == label {
			return strings.TrimSpace(out), tk.ID
		}
	}
	t.Fatalf("tokens list has no %s: %s", label, list)
	return "", ""
}

// hookHosts are three hosts on one cluster: a answers over its TCP API,
// b is a third host that answers late, c runs the local session whose
// hook asks. c's prompts wait for an answer as long as the test may take.
func hookHosts(t *testing.T) (a, b, c *host, apiAddr string) {
	t.Helper()
	nc := cluster(t)
	apiAddr = testutil.FreePort(t)
	a = startHost(t, "a", nc.URLs(), "--api", apiAddr, "--legs", "claude")
	b = startHost(t, "b", nc.URL(1)+","+nc.URL(2), "--legs", "none")
	c = startHost(t, "c", nc.URL(2)+","+nc.URL(0), "--legs", "claude", "--local-prompt-wait", "5m")
	return a, b, c, apiAddr
}

// A hook prompt of a local session on host c is listed on host a with its
// host, source and session name; host a's approve-scoped token answers it
// (a read-only one is refused), c's hook prints that decision, c records
// who gave it on which host, and host b's late answer is told it lost.
func TestAHookPromptOfALocalSessionIsAnsweredFromAnotherHostOnce(t *testing.T) {
	a, b, c, apiAddr := hookHosts(t)
	sid := c.hookSession(t, "deploy-box")
	approver, approverID := a.mint(t, "phone", "read,approve")
	reader, _ := a.mint(t, "dashboard", "read")
	ctx := testutil.Context(t, 120*time.Second)

	t.Run("an allow with an edited input from a's API", func(t *testing.T) {
		run := c.permissionHook(t, sid, "make deploy")
		own := c.hookPrompt(t, sid, "make deploy")
		p := a.hookPrompt(t, sid, "make deploy")
		if p.Host != "c" || p.Source != message.SourceHook || p.Name != "deploy-box" || p.Leg != message.ProtocolFederation ||
			p.RequestID != own.RequestID || p.ToolName != "Bash" || len(p.Suggestions) != 1 {
			t.Fatalf("a lists c's hook prompt as %+v (c lists it as %+v)", p, own)
		}
		onB := b.hookPrompt(t, sid, "make deploy")
		var ae *api.APIError
		if _, err := api.NewTCPClient("http://"+apiAddr, reader).AnswerPermission(ctx, p.ID,
			message.PermissionAnswer{Behavior: message.BehaviorAllow}); !errors.As(err, &ae) || ae.Status != 403 {
			t.Fatalf("a read-only token's allow: %v, want a 403", err)
		}
		edited := json.RawMessage(`{"command":"make deploy ENV=staging","description":"run it"}`)
		if _, err := api.NewTCPClient("http://"+apiAddr, approver).AnswerPermission(ctx, p.ID,
			message.PermissionAnswer{Behavior: message.BehaviorAllow, UpdatedInput: edited}); err != nil {
			t.Fatalf("the approve token's allow: %v", err)
		}
		// b has not necessarily heard yet: its deny travels to c and loses
		// there, or is refused on b.
		_, code, err := b.G.Run(t, "deny", onB.ID, "--message", "too late")
		want := "token:" + approverID + " on host a"
		if code == 0 || err == nil || !strings.Contains(err.Error(), "already answered (allow) by "+want) {
			t.Fatalf("b's late deny: exit %d, %v", code, err)
		}
		d := run.decision(t)
		if in, _ := d["updatedInput"].(map[string]any); d["behavior"] != "allow" || in["command"] != "make deploy ENV=staging" {
			t.Fatalf("c's hook decided %v", d)
		}
		if settled := c.waitPrompt(t, own.RequestID, message.PermissionAnswered); settled.AnsweredBy != want || settled.Source != message.SourceHook {
			t.Fatalf("c settled it as %+v, want answered by %s", settled, want)
		}
	})

	t.Run("a deny with its message from a's CLI", func(t *testing.T) {
		run := c.permissionHook(t, sid, "rm -rf build")
		p := a.hookPrompt(t, sid, "rm -rf build")
		out, code, err := a.G.Run(t, "deny", p.ID, "--message", "not on a Friday")
		if err != nil || code != 0 || !strings.HasPrefix(out, "denied "+p.ID) {
			t.Fatalf("a's deny: %q, exit %d, %v", out, code, err)
		}
		if d := run.decision(t); d["behavior"] != "deny" || d["message"] != "not on a Friday" {
			t.Fatalf("c's hook decided %v", d)
		}
		if settled := c.waitPrompt(t, p.RequestID, message.PermissionAnswered); settled.AnsweredBy != "socket:cli on host a" {
			t.Fatalf("c settled it as %+v", settled)
		}
		// b heard the prompt, and then its settling: a late allow there is
		// refused on b, or by c, never applied.
		onB := b.waitPrompt(t, p.RequestID, message.PermissionAnswered)
		if _, code, err := b.G.Run(t, "allow", onB.ID); code == 0 || err == nil || !strings.Contains(err.Error(), "already answered (deny) by socket:cli on host a") {
			t.Fatalf("b's late allow: exit %d, %v", code, err)
		}
	})

	t.Run("a prompt too large for the wire is listed cut down, beside the others", func(t *testing.T) {
		big := "cat > seed.sql <<'EOF'\n" + strings.Repeat("INSERT INTO t VALUES (1);\n", 45000) + "EOF" // over 1 MiB
		bigRun := c.permissionHook(t, sid, big)
		bigOnC := c.hookPrompt(t, sid, big)
		smallRun := c.permissionHook(t, sid, "make check")
		small := a.hookPrompt(t, sid, "make check")
		cut := a.waitPrompt(t, bigOnC.RequestID, message.PermissionPending)
		var note string
		if json.Unmarshal(cut.Input, &note) != nil || !strings.Contains(note, "shown whole on host c") || len(cut.Suggestions) != 0 {
			t.Fatalf("a lists the large prompt as %s with %d suggestions", cut.Input, len(cut.Suggestions))
		}
		for _, p := range []message.PermissionRequest{cut, small} {
			if _, code, err := a.G.Run(t, "deny", p.ID, "--message", "not now"); err != nil || code != 0 {
				t.Fatalf("a's deny of %s: exit %d, %v", p.ID, code, err)
			}
		}
		for _, run := range []*hookRun{bigRun, smallRun} {
			if d := run.decision(t); d["behavior"] != "deny" || d["message"] != "not now" {
				t.Fatalf("c's hook decided %v", d)
			}
		}
	})
}

// The stream's leader node dies while c's hook prompt is pending: a's
// answer still reaches c once, c's hook prints it, and a second answer
// from a is told the first won.
func TestAHookPromptIsAnsweredFromAnotherHostOnceAcrossANATSNodeLoss(t *testing.T) {
	nc := cluster(t)
	apiAddr := testutil.FreePort(t)
	a := startHost(t, "a", nc.URLs(), "--api", apiAddr, "--legs", "none")
	c := startHost(t, "c", nc.URL(2)+","+nc.URL(0)+","+nc.URL(1), "--legs", "claude", "--local-prompt-wait", "5m")
	sid := c.hookSession(t, "deploy-box")
	token, id := a.mint(t, "phone", "read,approve")
	approver := api.NewTCPClient("http://"+apiAddr, token)
	by := "token:" + id + " on host a"

	run := c.permissionHook(t, sid, "make release")
	p := a.hookPrompt(t, sid, "make release")
	leader := streamLeader(t, nc)
	t.Logf("killing %s, the stream's leader, with the prompt pending", nc.Name(leader))
	nc.Kill(leader)

	// An answer whose outcome did not come back in time may have been
	// applied: asked again, it is either applied now or told it already was.
	allow := message.PermissionAnswer{Behavior: message.BehaviorAllow}
	var last error
	ok := testutil.Within(90*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		_, last = approver.AnswerPermission(ctx, p.ID, allow)
		return last == nil || strings.Contains(last.Error(), "already answered (allow) by token:"+id)
	})
	if !ok {
		t.Fatalf("a's allow after the node loss: %v", last)
	}
	if d := run.decision(t); d["behavior"] != "allow" {
		t.Fatalf("c's hook decided %v", d)
	}
	if settled := c.waitPrompt(t, p.RequestID, message.PermissionAnswered); settled.AnsweredBy != by {
		t.Fatalf("c settled it as %+v, want answered by %s", settled, by)
	}
	ctx := testutil.Context(t, 60*time.Second)
	if _, err := approver.AnswerPermission(ctx, p.ID, message.PermissionAnswer{Behavior: message.BehaviorDeny}); err == nil ||
		!strings.Contains(err.Error(), "already answered (allow) by token:"+id) {
		t.Fatalf("a's second answer: %v, want it told the first won", err)
	}
}
