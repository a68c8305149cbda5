package claude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/message"
)

// Hook inputs as Claude Code 2.1.332 gives them (interop/FINDINGS-hooks.md),
// each in the request line `gateway hook` writes.
var hookSeeds = []struct{ event, input string }{
	{HookPermissionRequest, `{"session_id":"` + hookSession + `","transcript_path":"/tmp/h/.claude/projects/-tmp-w/` + hookSession + `.jsonl","cwd":"/tmp/w","prompt_id":"d24e5396-063e-456d-8f99-494fddc8f3e5","permission_mode":"default","effort":{"level":"medium"},"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"python3 -c \"print('hook-ran-7f3a')\"","description":"print a marker"},"permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"python3 -c \"print('hook-ran-7f3a')\""}],"behavior":"allow","destination":"localSettings"}]}`},
	{HookPermissionRequest, `{"session_id":"` + hookSession + `","cwd":"/w","hook_event_name":"PermissionRequest","tool_name":"mcp__fs__write","mcp_server":"fs","tool_input":{},"permission_suggestions":[{"type":"setMode","mode":"acceptEdits","destination":"session"},{"type":"addDirectories","directories":["/w/out"],"destination":"session"}]}`},
	{HookNotification, `{"session_id":"` + hookSession + `","transcript_path":"/t.jsonl","cwd":"/tmp/w","prompt_id":"d24e5396-063e-456d-8f99-494fddc8f3e5","hook_event_name":"Notification","message":"Claude needs your permission","notification_type":"permission_prompt"}`},
	{HookNotification, `{"session_id":"` + hookSession + `","hook_event_name":"Notification","message":"Auto mode can't check actions in this session and needs your choice","notification_type":"agent_needs_input"}`},
	{HookStop, `{"session_id":"` + hookSession + `","transcript_path":"/t.jsonl","cwd":"/tmp/w","prompt_id":"p","permission_mode":"default","effort":{"level":"medium"},"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"finished","background_tasks":[],"session_crons":[]}`},
	{HookPermissionRequest, `{"session_id":"s","tool_name":"Bash","tool_input":"rm -rf /"}`},
	{HookPermissionRequest, `{"session_id":"s","tool_name":"Bash","tool_input":null,"permission_suggestions":{}}`},
	{"PreToolUse", `{"session_id":"s","tool_name":"Bash"}`},
	{HookStop, `[1,2,3]`},
}

// FuzzHookRequestLine sends any first line to a running hook endpoint, as a
// same-user process may. Every line gets its reply at once: a refusal is an
// error reply, counted; a line parseHookRequest takes is taken, and a
// PermissionRequest becomes a pending prompt of the hook's session with the
// fields of its input, withdrawn when the hook hangs up.
func FuzzHookRequestLine(f *testing.F) {
	for _, s := range hookSeeds {
		line, _ := json.Marshal(HookRequest{V: 1, Event: s.event, Input: json.RawMessage(s.input)})
		f.Add(line)
	}
	f.Add([]byte(`{"v":2,"event":"Stop","input":{"session_id":"s"}}`))
	f.Add([]byte(`{"V":1,"EVENT":"Stop","INPUT":{"Session_Id":"s"}}`))
	f.Add([]byte(``))
	f.Add([]byte("{\"v\":1,\"event\":\"Stop\",\n\"input\":{\"session_id\":\"s\"}}"))
	// One endpoint per fuzzing process; no cap is reached one line at a time.
	h := startHookRig(f, HookOptions{Wait: time.Minute, MaxOpen: 1 << 10, MaxPerSession: 1 << 10})
	perms := make(chan message.PermissionRequest, 64)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() { // the other events (idle notices) are not this target's
		defer close(stopped)
		for {
			select {
			case ev := <-h.events:
				if ev.Type != message.EventPermission {
					continue
				}
				select {
				case perms <- *ev.Permission:
				case <-stop:
					return
				}
			case <-stop:
				return
			}
		}
	}()
	f.Cleanup(func() { close(stop); <-stopped })
	f.Fuzz(func(t *testing.T, line []byte) {
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i] // the endpoint reads the first line only
		}
		if len(line) > DefaultMaxHookInput {
			return // past the line cap the endpoint hangs up: the listener's tests
		}
		event, in, perr := parseHookRequest(line)
		refused := h.p.HookStats().Refused
		conn, err := net.DialTimeout("unix", h.socket, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Far beyond the endpoint's own bounds: passing it is a hang.
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := conn.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(conn)
		r, err := readReply(sc)
		if err != nil {
			t.Fatalf("no reply to %q: %v", line, err)
		}
		if perr != nil {
			if r.OK || r.Error != perr.Error() {
				t.Fatalf("%q, refused (%v), was answered %+v", line, perr, r)
			}
			if n := h.p.HookStats().Refused; n != refused+1 {
				t.Fatalf("a refusal counted %d times", n-refused)
			}
			return
		}
		if !r.OK || r.Error != "" {
			t.Fatalf("%q, taken as %s of %+v, was answered %+v", line, event, in, r)
		}
		if event != HookPermissionRequest {
			return
		}
		p := nextPerm(t, perms, r.ID)
		if _, err := uuid.Parse(r.ID); err != nil || p.State != message.PermissionPending || p.Source != message.SourceHook ||
			p.SessionID != in.SessionID || p.ToolName != in.ToolName || !json.Valid(p.Input) || p.Input[0] != '{' {
			t.Fatalf("%q raised %+v (reply %+v)", line, p, r)
		}
		if len(p.SessionID) > maxHookSessionID || len(p.ToolName) > maxHookToolName || len(p.ToolUseID) > maxHookToolUseID ||
			len(p.Suggestions) > message.MaxSuggestions {
			t.Fatalf("%q raised a prompt past the bounds: %+v", line, p)
		}
		for _, u := range p.Suggestions {
			if !u.Valid() {
				t.Fatalf("%q raised an invalid suggestion %+v", line, u)
			}
		}
		_ = conn.Close() // the hook ends: answered at the terminal
		if p := nextPerm(t, perms, r.ID); p.State != message.PermissionCancelled {
			t.Fatalf("the ended hook's prompt became %+v", p)
		}
	})
}

// nextPerm is the next permission event of request id.
func nextPerm(t *testing.T, perms <-chan message.PermissionRequest, id string) message.PermissionRequest {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case p := <-perms:
			if p.RequestID == id {
				return p
			}
		case <-timeout:
			t.Fatalf("no event of prompt %s", id)
		}
	}
}
