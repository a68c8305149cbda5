package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/away"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// hookRig is a leg with a hook endpoint, and a registry entry for the
// test's parent process, which stands for the Claude Code session the
// hook (this process) runs under.
type hookRig struct {
	*rig
	socket string
	away   *away.State
}

const hookSession = "5c0e1d2f-0000-4000-8000-00000000abcd"

func startHookRig(t testing.TB, opt HookOptions) *hookRig {
	t.Helper()
	cfgDir := t.TempDir()
	sessions := filepath.Join(cfgDir, "sessions")
	if err := safefile.EnsureDir(sessions); err != nil {
		t.Fatal(err)
	}
	ppid := os.Getppid()
	entry := `{"pid":` + strconv.Itoa(ppid) + `,"sessionId":"` + hookSession + `","cwd":"/work","name":"work-08","kind":"interactive","messagingSocketPath":"/tmp/cc-socks/` + strconv.Itoa(ppid) + `.sock"}`
	if err := os.WriteFile(filepath.Join(sessions, strconv.Itoa(ppid)+".json"), []byte(entry), 0o600); err != nil {
		t.Fatal(err)
	}
	aw := &away.State{}
	opt.Socket = filepath.Join(testutil.ShortTempDir(t), "hooks.sock")
	if opt.Away == nil {
		opt.Away = aw
	}
	r := startRig(t, Config{ConfigDir: cfgDir, Hooks: opt})
	return &hookRig{rig: r, socket: opt.Socket, away: aw}
}

type hookRun struct {
	out  bytes.Buffer
	err  error
	done chan struct{}
}

// hook runs `gateway hook EVENT` in the background with input.
func (h *hookRig) hook(ctx context.Context, event, input string) *hookRun {
	run := &hookRun{done: make(chan struct{})}
	go func() {
		defer close(run.done)
		run.err = RunHook(ctx, h.socket, event, strings.NewReader(input), &run.out)
	}()
	return run
}

func (run *hookRun) wait(t *testing.T) {
	t.Helper()
	select {
	case <-run.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the hook never ended")
	}
}

func (h *hookRig) prompt(t *testing.T, state message.PermissionState) message.PermissionRequest {
	t.Helper()
	ev := h.next(t, func(ev message.Event) bool {
		return ev.Type == message.EventPermission && ev.Permission.State == state
	})
	return *ev.Permission
}

const bashHook = `{"session_id":"` + hookSession + `","transcript_path":"/tmp/t.jsonl","cwd":"/work","permission_mode":"default",
 "hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"make deploy"},
 "permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"make deploy"}],"behavior":"allow","destination":"localSettings"}]}`

func TestAHookPromptIsTheSessionsAndItsAnswerIsTheHooksDecision(t *testing.T) {
	cases := []struct {
		name   string
		answer message.PermissionAnswer
		want   string // the hook's stdout
	}{
		{"an allow with the offered suggestion", message.PermissionAnswer{Behavior: message.BehaviorAllow, Suggestions: []int{1}},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"make deploy"}],"behavior":"allow","destination":"localSettings"}]}}}`},
		{"an allow with an edited input", message.PermissionAnswer{Behavior: message.BehaviorAllow, UpdatedInput: json.RawMessage(`{"command":"make test"}`)},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"command":"make test"}}}}`},
		{"a deny with its message", message.PermissionAnswer{Behavior: message.BehaviorDeny, Message: "not on a Friday"},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"not on a Friday"}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startHookRig(t, HookOptions{Wait: time.Minute})
			run := h.hook(t.Context(), HookPermissionRequest, bashHook)
			p := h.prompt(t, message.PermissionPending)
			if p.Source != message.SourceHook || p.SessionID != hookSession || p.Name != "work-08" ||
				!strings.HasSuffix(p.Address, strconv.Itoa(os.Getppid())+".sock") || p.ToolName != "Bash" || len(p.Suggestions) != 1 {
				t.Fatalf("prompt = %+v", p)
			}
			if err := h.p.Answer(t.Context(), p, tc.answer); err != nil {
				t.Fatal(err)
			}
			run.wait(t)
			if run.err != nil || strings.TrimSpace(run.out.String()) != tc.want {
				t.Fatalf("hook printed %q (err %v), want %s", run.out.String(), run.err, tc.want)
			}
			if st := h.p.HookStats(); st.Prompts != 1 || st.Answered != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestAPromptNobodyAnswersGoesBackToTheTerminal(t *testing.T) {
	h := startHookRig(t, HookOptions{Wait: 200 * time.Millisecond})
	run := h.hook(t.Context(), HookPermissionRequest, bashHook)
	p := h.prompt(t, message.PermissionPending)
	run.wait(t)
	if run.out.Len() != 0 || run.err == nil || !strings.Contains(run.err.Error(), "terminal asks") {
		t.Fatalf("hook printed %q, err %v: want no decision and why", run.out.String(), run.err)
	}
	if c := h.prompt(t, message.PermissionCancelled); c.RequestID != p.RequestID {
		t.Fatalf("withdrew %s, want %s", c.RequestID, p.RequestID)
	}
	var se *message.PromptSettledError
	if err := h.p.Answer(t.Context(), p, message.PermissionAnswer{Behavior: message.BehaviorAllow}); !errors.As(err, &se) {
		t.Fatalf("a late answer: %v, want it refused as settled", err)
	}
	if st := h.p.HookStats(); st.Returned != 1 || st.Answered != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWhileAwayAPromptWaitsAndComingBackGivesItToTheTerminal(t *testing.T) {
	h := startHookRig(t, HookOptions{Wait: 100 * time.Millisecond})
	if _, err := h.away.Set(true, time.Now()); err != nil {
		t.Fatal(err)
	}
	run := h.hook(t.Context(), HookPermissionRequest, bashHook)
	h.prompt(t, message.PermissionPending)
	select {
	case <-run.done:
		t.Fatalf("the hook ended while away: %q, %v", run.out.String(), run.err)
	case <-time.After(500 * time.Millisecond): // five times the wait
	}
	if _, err := h.away.Set(false, time.Now()); err != nil {
		t.Fatal(err)
	}
	run.wait(t)
	if run.out.Len() != 0 {
		t.Fatalf("hook printed %q, want no decision", run.out.String())
	}
	h.prompt(t, message.PermissionCancelled)
}

func TestAHookThatEndsFirstSettlesItsPrompt(t *testing.T) {
	h := startHookRig(t, HookOptions{Wait: time.Minute})
	ctx, kill := context.WithCancel(t.Context())
	run := h.hook(ctx, HookPermissionRequest, bashHook)
	p := h.prompt(t, message.PermissionPending)
	kill() // the CLI ended the hook: answered at the terminal, or its timeout
	run.wait(t)
	h.prompt(t, message.PermissionCancelled)
	var se *message.PromptSettledError
	if err := h.p.Answer(t.Context(), p, message.PermissionAnswer{Behavior: message.BehaviorAllow}); !errors.As(err, &se) {
		t.Fatalf("an answer after the hook ended: %v, want it refused as settled", err)
	}
	if out := run.out.String(); out != "" {
		t.Fatalf("the ended hook printed %q", out)
	}
}

func TestWithNoGatewayAHookDecidesNothingAtOnce(t *testing.T) {
	start := time.Now()
	var out bytes.Buffer
	err := RunHook(t.Context(), filepath.Join(t.TempDir(), "hooks.sock"), HookPermissionRequest, strings.NewReader(bashHook), &out)
	if err == nil || out.Len() != 0 {
		t.Fatalf("err %v, printed %q: want no decision and why", err, out.String())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestPromptsPastTheCapGoStraightToTheTerminal(t *testing.T) {
	h := startHookRig(t, HookOptions{Wait: time.Minute, MaxPerSession: 1})
	first := h.hook(t.Context(), HookPermissionRequest, bashHook)
	h.prompt(t, message.PermissionPending)
	second := h.hook(t.Context(), HookPermissionRequest, bashHook)
	second.wait(t)
	if second.out.Len() != 0 || second.err == nil || !strings.Contains(second.err.Error(), "already waiting") {
		t.Fatalf("second hook: %q, %v", second.out.String(), second.err)
	}
	if st := h.p.HookStats(); st.Refused != 1 || st.Prompts != 1 {
		t.Fatalf("stats %+v", st)
	}
	_ = first
}

func TestAHookTheEndpointCannotReadIsRefused(t *testing.T) {
	cases := []struct{ name, event, input string }{
		{"no session id", HookPermissionRequest, `{"tool_name":"Bash","tool_input":{}}`},
		{"no tool", HookPermissionRequest, `{"session_id":"s"}`},
		{"a tool input that is no object", HookPermissionRequest, `{"session_id":"s","tool_name":"Bash","tool_input":"rm -rf /"}`},
		{"a tool use id over 256 bytes", HookPermissionRequest, `{"session_id":"s","tool_name":"Bash","tool_use_id":"` + strings.Repeat("u", 257) + `"}`},
		{"an input that is no object", HookPermissionRequest, `[1,2,3]`},
		{"an event of no hook of ours", "PreToolUse", `{"session_id":"s","tool_name":"Bash"}`},
		{"no JSON at all", HookPermissionRequest, `allow`},
	}
	h := startHookRig(t, HookOptions{Wait: time.Minute})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := RunHook(t.Context(), h.socket, tc.event, strings.NewReader(tc.input), &out); err == nil || out.Len() != 0 {
				t.Fatalf("err %v, printed %q", err, out.String())
			}
		})
	}
}

func TestNotificationAndStopHooksSayTheSessionWaitsOrIsIdle(t *testing.T) {
	h := startHookRig(t, HookOptions{})
	cases := []struct{ event, input, state string }{
		{HookNotification, `{"session_id":"` + hookSession + `","hook_event_name":"Notification","message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}`, "waiting"},
		{HookStop, `{"session_id":"` + hookSession + `","hook_event_name":"Stop","stop_hook_active":false}`, "idle"},
	}
	for _, tc := range cases {
		t.Run(tc.event, func(t *testing.T) {
			run := h.hook(t.Context(), tc.event, tc.input)
			run.wait(t)
			if run.err != nil || run.out.Len() != 0 {
				t.Fatalf("err %v, printed %q", run.err, run.out.String())
			}
			ev := h.next(t, func(ev message.Event) bool { return ev.Type == message.EventIdle && ev.Idle.State == tc.state })
			if !strings.HasSuffix(ev.Idle.Peer, strconv.Itoa(os.Getppid())+".sock") {
				t.Fatalf("idle %+v", ev.Idle)
			}
		})
	}
}

func TestAHookPromptKeepsAtMostMaxSuggestions(t *testing.T) {
	h := startHookRig(t, HookOptions{Wait: time.Minute})
	rules := make([]string, message.MaxSuggestions+4)
	for i := range rules {
		rules[i] = `{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"make ` + strconv.Itoa(i) + `"}],"behavior":"allow","destination":"session"}`
	}
	in := `{"session_id":"` + hookSession + `","tool_name":"Bash","tool_input":{"command":"make"},"permission_suggestions":[` + strings.Join(rules, ",") + `]}`
	h.hook(t.Context(), HookPermissionRequest, in)
	if p := h.prompt(t, message.PermissionPending); len(p.Suggestions) != message.MaxSuggestions || p.Suggestions[0].Rules[0].RuleContent != "make 0" {
		t.Fatalf("kept %d suggestions: %+v", len(p.Suggestions), p.Suggestions)
	}
}
