package claude

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
)

const (
	ranHook = `{"session_id":"` + hookSession + `","cwd":"/work","hook_event_name":"PostToolUse","tool_name":"Bash",
 "tool_input":{"command":"make deploy"},"tool_response":{"stdout":"ok"},"tool_use_id":"toolu_01"}`
	otherRanHook = `{"session_id":"` + hookSession + `","cwd":"/work","hook_event_name":"PostToolUse","tool_name":"Bash",
 "tool_input":{"command":"make test"},"tool_response":{"stdout":"ok"},"tool_use_id":"toolu_02"}`
	stopHook      = `{"session_id":"` + hookSession + `","cwd":"/work","hook_event_name":"Stop","stop_hook_active":false}`
	otherBashHook = `{"session_id":"0ther000-0000-4000-8000-000000000000","cwd":"/w","hook_event_name":"PermissionRequest",
 "tool_name":"Bash","tool_input":{"command":"make deploy"}}`
)

func TestAToolThatRanWhileItsPromptWaitedWasAllowedAtTheTerminal(t *testing.T) {
	h := startHookRig(t, HookOptions{Wait: time.Minute})
	run := h.hook(t.Context(), HookPermissionRequest, bashHook)
	p := h.prompt(t, message.PermissionPending)

	h.hook(t.Context(), HookPostToolUse, otherRanHook).wait(t)
	select {
	case <-run.done:
		t.Fatal("another tool's run settled the prompt")
	case <-time.After(200 * time.Millisecond):
	}

	h.hook(t.Context(), HookPostToolUse, ranHook).wait(t)
	run.wait(t)
	if run.out.Len() != 0 {
		t.Fatalf("the settled hook printed %q, want no decision", run.out.String())
	}
	got := h.prompt(t, message.PermissionAnswered)
	if got.RequestID != p.RequestID || got.Answer == nil || got.Answer.Behavior != message.BehaviorAllow || got.Answer.By != AnsweredAtTerminal {
		t.Fatalf("settled as %+v (answer %+v), want allowed at the terminal", got, got.Answer)
	}
	var se *message.PromptSettledError
	if err := h.p.Answer(t.Context(), p, message.PermissionAnswer{Behavior: message.BehaviorDeny}); !errors.As(err, &se) {
		t.Fatalf("an answer after the terminal's: %v, want it refused as settled", err)
	}
	if st := h.p.HookStats(); st.Terminal != 1 || st.Answered != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestATurnThatEndedWithdrawsItsSessionsPromptsOnly(t *testing.T) {
	h := startHookRig(t, HookOptions{Wait: time.Minute})
	mine := h.hook(t.Context(), HookPermissionRequest, bashHook)
	p := h.prompt(t, message.PermissionPending)
	theirs := h.hook(t.Context(), HookPermissionRequest, otherBashHook)
	q := h.prompt(t, message.PermissionPending)

	h.hook(t.Context(), HookStop, stopHook).wait(t)
	mine.wait(t)
	if c := h.prompt(t, message.PermissionCancelled); c.RequestID != p.RequestID {
		t.Fatalf("withdrew %s, want %s", c.RequestID, p.RequestID)
	}
	if err := h.p.Answer(t.Context(), q, message.PermissionAnswer{Behavior: message.BehaviorAllow}); err != nil {
		t.Fatalf("the other session's prompt: %v", err)
	}
	theirs.wait(t)
	if !strings.Contains(theirs.out.String(), `"behavior":"allow"`) {
		t.Fatalf("the other session's hook printed %q", theirs.out.String())
	}
}
