package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
)

// hookRig is a hook command for the real CLI: a shell script that logs, per
// run, its stdin, environment, cwd and any signal it got into dir, then does
// what body says (print a decision, sleep, exit 2). See
// interop/FINDINGS-hooks.md.
type hookRig struct {
	dir    string
	script string
}

// newHookRig writes the script. body runs after stdin is logged; $D is the
// log dir and $N this run's file prefix.
func newHookRig(t *testing.T, body string) hookRig {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "hook.sh")
	src := `#!/bin/sh
D=` + dir + `
N="$D/$1-$(date +%s%N)"
trap 'echo TERM >>"$N.sig"; exit 143' TERM
trap 'echo HUP >>"$N.sig"; exit 129' HUP
trap 'echo INT >>"$N.sig"; exit 130' INT
echo $$ >"$N.pid"
cat >"$N.in"
env >"$N.env"
pwd >"$N.cwd"
ps -o args= -p $PPID >"$N.parent" 2>/dev/null
if [ "$1" = PermissionRequest ]; then
` + body + `
fi
echo end >"$N.end"
`
	if err := os.WriteFile(script, []byte(src), 0o700); err != nil {
		t.Fatal(err)
	}
	return hookRig{dir: dir, script: script}
}

// settings installs the script for PermissionRequest (matcher "*"),
// Notification and Stop (no matcher), as `<script> <Event>`.
func (r hookRig) settings(timeout int) []byte {
	entry := func(event, matcher string) []map[string]any {
		h := map[string]any{"type": "command", "command": r.script + " " + event}
		if timeout > 0 {
			h["timeout"] = timeout
		}
		e := map[string]any{"hooks": []any{h}}
		if matcher != "" {
			e["matcher"] = matcher
		}
		return []map[string]any{e}
	}
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"PermissionRequest": entry("PermissionRequest", "*"),
		"Notification":      entry("Notification", ""),
		"Stop":              entry("Stop", ""),
	}})
	return b
}

// runs lists the logged runs of event, oldest first, by file prefix.
func (r hookRig) runs(event string) []string {
	m, _ := filepath.Glob(filepath.Join(r.dir, event+"-*.in"))
	sort.Strings(m)
	for i := range m {
		m[i] = strings.TrimSuffix(m[i], ".in")
	}
	return m
}

func (r hookRig) waitRun(t *testing.T, event string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if runs := r.runs(event); len(runs) > 0 {
			return runs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s hook never ran", event)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// logRuns logs every run the rig saw, to record the bytes.
func (r hookRig) logRuns(t *testing.T) {
	for _, ev := range []string{"PermissionRequest", "Notification", "Stop"} {
		for _, n := range r.runs(ev) {
			env := []string{}
			for _, l := range strings.Split(readFile(n+".env"), "\n") {
				if strings.HasPrefix(l, "CLAUDE") || strings.HasPrefix(l, "PWD=") || strings.HasPrefix(l, "SHLVL") || strings.HasPrefix(l, "_=") {
					env = append(env, l)
				}
			}
			t.Logf("%s run %s\nstdin: %s\ncwd: %senv: %v\nparent: %ssig: %q end: %q",
				ev, filepath.Base(n), readFile(n+".in"), readFile(n+".cwd"), env, readFile(n+".parent"), readFile(n+".sig"), readFile(n+".end"))
		}
	}
}

const hookMarker = "hook-ran-7f3a"

// hookBash is a command the CLI does not count as read-only, so it asks.
var hookBash = func() string {
	b, _ := json.Marshal(map[string]string{"command": fmt.Sprintf(`python3 -c "print('%s')"`, hookMarker), "description": "print a marker"})
	return string(b)
}()

// toolResult is the first tool_result the fake model was sent: its text and
// whether it is an error.
func toolResult(model *fakeanthropic.Server) (text string, isErr, ok bool) {
	for _, req := range model.Requests() {
		if rs := req.ToolResults(); len(rs) > 0 {
			var sb strings.Builder
			for _, c := range rs[0].Content {
				sb.WriteString(c.Text)
			}
			return sb.String(), rs[0].IsError, true
		}
	}
	return "", false, false
}

func waitToolResult(t *testing.T, model *fakeanthropic.Server, timeout time.Duration) (string, bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if text, isErr, ok := toolResult(model); ok {
			return text, isErr
		}
		if time.Now().After(deadline) {
			t.Fatal("the model was never sent a tool_result")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Decisions a hook prints, as the CLI accepts them (interop/FINDINGS-hooks.md §3).
const (
	hookAllow = `printf '%s' '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'`
	hookDeny  = `printf '%s' '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"denied-by-gw-91"}}}'`
	// noDecision is what the CLI's "This command requires approval" says
	// in -p when nothing decided.
	noDecision = "This command requires approval"
	dialog     = "Do you want to proceed?"
)

func startHooked(t *testing.T, mode string, rig hookRig, timeout int) (*claudecli.Session, *fakeanthropic.Server) {
	t.Helper()
	model := fakeanthropic.Start(t, fakeanthropic.CallToolOnce("please-run", "Bash", hookBash, "finished"))
	s := claudecli.Start(t, claudecli.Options{
		APIURL: model.URL(), Mode: mode, Settings: rig.settings(timeout),
		// The TUI defaults to auto mode, whose classifier cannot be reached
		// offline; default mode asks with the plain dialog.
		Args: []string{"--permission-mode", "default"},
	})
	return s, model
}

func TestInPrintModeAPermissionRequestHookDecidesAndNothingElseAllows(t *testing.T) {
	cases := []struct {
		name, body, want string
		wantErr          bool
		meta             string // in a stream-json event: how the CLI reports who decided
	}{
		{"an allow runs the tool", hookAllow, hookMarker, false, `"permission_decision":{"decision":"accept","source":"hook","reason_type":"hook"}`},
		{"a deny gives the model the hook's message", hookDeny, "denied-by-gw-91", true, `"subtype":"permission_denied","tool_name":"Bash","tool_use_id":"toolu_fake0001_0","decision_reason_type":"hook","decision_reason":"denied-by-gw-91","message":"denied-by-gw-91"`},
		{"a slow allow is waited for", `sleep 4; ` + hookAllow, hookMarker, false, ""},
		{"empty output is no decision, denied", `true`, noDecision, true, `"decision_reason_type":"other","decision_reason":"This command requires approval"`},
		{"exit 1 is no decision, denied", `echo oops >&2; exit 1`, noDecision, true, `"decision_reason_type":"other","decision_reason":"This command requires approval"`},
		{"exit 2 is no decision, denied", `echo oops >&2; exit 2`, noDecision, true, `"decision_reason_type":"other","decision_reason":"This command requires approval"`},
		{"invalid JSON is no decision, denied", `echo 'not json {'`, noDecision, true, `"decision_reason_type":"other","decision_reason":"This command requires approval"`},
		{"an allow without hookEventName is no decision", `printf '%s' '{"hookSpecificOutput":{"decision":{"behavior":"allow"}}}'`, noDecision, true, `"decision_reason_type":"other","decision_reason":"This command requires approval"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			needInterop(t)
			rig := newHookRig(t, c.body)
			s, model := startHooked(t, claudecli.ModeStreamJSON, rig, 0)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			if _, err := s.Turn(ctx, "please-run"); err != nil {
				t.Fatal(err)
			}
			text, isErr := waitToolResult(t, model, 10*time.Second)
			if !strings.Contains(text, c.want) || isErr != c.wantErr {
				t.Errorf("tool_result = %q (is_error %v), want %q (is_error %v)", text, isErr, c.want, c.wantErr)
			}
			run := rig.waitRun(t, "PermissionRequest", 5*time.Second)
			var in map[string]any
			if err := json.Unmarshal([]byte(readFile(run+".in")), &in); err != nil {
				t.Fatalf("hook stdin: %v", err)
			}
			for _, k := range []string{"session_id", "transcript_path", "cwd", "permission_mode", "hook_event_name", "tool_name", "tool_input", "permission_suggestions"} {
				if _, ok := in[k]; !ok {
					t.Errorf("hook stdin has no %q: %s", k, readFile(run+".in"))
				}
			}
			if in["hook_event_name"] != "PermissionRequest" || in["tool_name"] != "Bash" || in["session_id"] != s.SessionID() {
				t.Errorf("hook stdin = %s", readFile(run+".in"))
			}
			if got := readFile(run + ".cwd"); strings.TrimSpace(got) != s.Cwd() {
				t.Errorf("hook cwd = %q, want %q", got, s.Cwd())
			}
			if env := readFile(run + ".env"); !strings.Contains(env, "CLAUDE_PROJECT_DIR="+s.Cwd()+"\n") {
				t.Errorf("hook env has no CLAUDE_PROJECT_DIR=%s", s.Cwd())
			}
			if p := readFile(run + ".parent"); !strings.HasPrefix(p, "/bin/sh -c ") {
				t.Errorf("hook parent = %q, want /bin/sh -c", p)
			}
			if c.name == cases[0].name {
				stop := rig.waitRun(t, "Stop", 10*time.Second)
				if in := readFile(stop + ".in"); !strings.Contains(in, `"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"finished"`) {
					t.Errorf("Stop stdin = %s", in)
				}
			}
			if c.meta != "" {
				if !hasEvent(s, c.meta) {
					t.Errorf("no stream-json event carries %s", c.meta)
				}
			}
			if t.Failed() {
				rig.logRuns(t)
			}
		})
	}
}

func hasEvent(s *claudecli.Session, sub string) bool {
	for _, e := range s.Events() {
		if strings.Contains(string(e.Raw), sub) {
			return true
		}
	}
	return false
}

// waitClaudeScreen waits until the TUI shows (or, with show false, stops
// showing) want.
func waitClaudeScreen(t *testing.T, s *claudecli.Session, want string, show bool, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		screen, err := s.Screen()
		if err == nil && strings.Contains(screen, want) == show {
			return screen
		}
		if time.Now().After(deadline) {
			t.Fatalf("the TUI did not %s %q within %v:\n%s", map[bool]string{true: "show", false: "stop showing"}[show], want, timeout, screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func hookAlive(run string) bool {
	pid := strings.TrimSpace(readFile(run + ".pid"))
	_, err := os.Stat("/proc/" + pid)
	return pid != "" && err == nil
}

func TestInTheTUIThePermissionDialogRacesAPermissionRequestHook(t *testing.T) {
	t.Run("the dialog shows while the hook runs, and the hook's allow closes it and runs the tool", func(t *testing.T) {
		needInterop(t)
		rig := newHookRig(t, `sleep 8 & wait $!; `+hookAllow)
		s, model := startHooked(t, claudecli.ModeTUI, rig, 0)
		if err := s.SendUserTurn("please-run"); err != nil {
			t.Fatal(err)
		}
		waitClaudeScreen(t, s, dialog, true, 15*time.Second)
		run := rig.waitRun(t, "PermissionRequest", time.Second)
		if !hookAlive(run) {
			t.Fatal("the hook was not running when the dialog showed")
		}
		text, isErr := waitToolResult(t, model, 20*time.Second)
		if text != hookMarker || isErr {
			t.Errorf("tool_result = %q (is_error %v)", text, isErr)
		}
		waitClaudeScreen(t, s, "Allowed by PermissionRequest hook", true, 5*time.Second)
		notif := rig.waitRun(t, "Notification", 5*time.Second)
		if in := readFile(notif + ".in"); !strings.Contains(in, `"message":"Claude needs your permission","notification_type":"permission_prompt"`) {
			t.Errorf("Notification stdin = %s", in)
		}
	})
	t.Run("a hook's deny closes the dialog and the model gets its message", func(t *testing.T) {
		needInterop(t)
		rig := newHookRig(t, `sleep 4 & wait $!; `+hookDeny)
		s, model := startHooked(t, claudecli.ModeTUI, rig, 0)
		if err := s.SendUserTurn("please-run"); err != nil {
			t.Fatal(err)
		}
		waitClaudeScreen(t, s, dialog, true, 15*time.Second)
		text, isErr := waitToolResult(t, model, 15*time.Second)
		if text != "denied-by-gw-91" || !isErr {
			t.Errorf("tool_result = %q (is_error %v)", text, isErr)
		}
		waitClaudeScreen(t, s, dialog, false, 5*time.Second)
	})
	t.Run("the person's answer wins, and the hook is left running, unsignalled, its late deny ignored", func(t *testing.T) {
		needInterop(t)
		rig := newHookRig(t, `sleep 10 & wait $!; `+hookDeny)
		s, model := startHooked(t, claudecli.ModeTUI, rig, 0)
		if err := s.SendUserTurn("please-run"); err != nil {
			t.Fatal(err)
		}
		waitClaudeScreen(t, s, dialog, true, 15*time.Second)
		// A key pressed as the dialog first draws is lost.
		time.Sleep(1500 * time.Millisecond)
		if err := s.Keys("Enter"); err != nil { // "1. Yes" is selected
			t.Fatal(err)
		}
		text, isErr := waitToolResult(t, model, 10*time.Second)
		if text != hookMarker || isErr {
			t.Errorf("tool_result = %q (is_error %v)", text, isErr)
		}
		run := rig.waitRun(t, "PermissionRequest", time.Second)
		if !hookAlive(run) {
			t.Errorf("the hook was gone right after the person answered (sig %q)", readFile(run+".sig"))
		}
		deadline := time.Now().Add(15 * time.Second)
		for readFile(run+".end") == "" && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		if readFile(run+".end") == "" || readFile(run+".sig") != "" {
			t.Errorf("the hook did not run to its end unsignalled: end %q sig %q", readFile(run+".end"), readFile(run+".sig"))
		}
		if screen, _ := s.Screen(); strings.Contains(screen, "denied-by-gw-91") {
			t.Errorf("the late deny showed:\n%s", screen)
		}
	})
	t.Run("empty output leaves the dialog to the person, and Esc rejects", func(t *testing.T) {
		needInterop(t)
		rig := newHookRig(t, `true`)
		s, model := startHooked(t, claudecli.ModeTUI, rig, 0)
		if err := s.SendUserTurn("please-run"); err != nil {
			t.Fatal(err)
		}
		waitClaudeScreen(t, s, dialog, true, 15*time.Second)
		run := rig.waitRun(t, "PermissionRequest", time.Second)
		deadline := time.Now().Add(5 * time.Second)
		for readFile(run+".end") == "" && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(2 * time.Second)
		waitClaudeScreen(t, s, dialog, true, time.Second)
		if _, _, ok := toolResult(model); ok {
			t.Fatal("the tool was decided with the dialog open")
		}
		// Esc rejects and interrupts the turn: the model is sent nothing.
		if err := s.Keys("Escape"); err != nil {
			t.Fatal(err)
		}
		waitClaudeScreen(t, s, "Interrupted", true, 10*time.Second)
		if _, _, ok := toolResult(model); ok {
			t.Error("the model was sent a tool_result after Esc")
		}
	})
	t.Run("at its timeout (seconds) the hook gets SIGTERM and the dialog stays", func(t *testing.T) {
		needInterop(t)
		rig := newHookRig(t, `sleep 60 & wait $!; `+hookAllow)
		s, model := startHooked(t, claudecli.ModeTUI, rig, 3)
		if err := s.SendUserTurn("please-run"); err != nil {
			t.Fatal(err)
		}
		waitClaudeScreen(t, s, dialog, true, 15*time.Second)
		run := rig.waitRun(t, "PermissionRequest", time.Second)
		deadline := time.Now().Add(10 * time.Second)
		for readFile(run+".sig") == "" && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if got := readFile(run + ".sig"); got != "TERM\n" {
			t.Errorf("the hook got %q at its timeout, want TERM", got)
		}
		time.Sleep(time.Second)
		waitClaudeScreen(t, s, dialog, true, time.Second)
		if _, _, ok := toolResult(model); ok {
			t.Fatal("the tool was decided when the hook timed out")
		}
	})
}
