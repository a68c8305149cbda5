package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
)

// These tests pin what interop/FINDINGS-hosted.md says the real CLIs do when
// a host program runs them headless: the frames on stdin and stdout, the
// permission handshake, the host's control requests, stdin EOF and resume.
// GATEWAY_INTEROP=1 go test ./interop/ -run Hosted (about 30 s; the Qwen half is in
// hosted_qwen_findings_test.go).

// frame is the part of a stream-json line these tests read.
type frame struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
	Request   struct {
		Subtype                 string            `json:"subtype"`
		ToolName                string            `json:"tool_name"`
		Input                   map[string]any    `json:"input"`
		ToolUseID               string            `json:"tool_use_id"`
		PermissionSuggestions   []json.RawMessage `json:"permission_suggestions"`
		DecisionReason          string            `json:"decision_reason"`
		RequiresUserInteraction bool              `json:"requires_user_interaction"`
	} `json:"request"`
	Message struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	// system/init (Claude spells the mode permissionMode, Qwen permission_mode)
	Model          string   `json:"model"`
	PermissionMode string   `json:"permissionMode"`
	QwenMode       string   `json:"permission_mode"`
	Tools          []string `json:"tools"`
	// result
	IsError           bool              `json:"is_error"`
	TerminalReason    string            `json:"terminal_reason"`
	PermissionDenials []json.RawMessage `json:"permission_denials"`
}

func decodeFrame(t *testing.T, raw []byte) frame {
	t.Helper()
	var f frame
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("not a JSON line: %s", raw)
	}
	return f
}

// toolResult is the first tool_result block of a user frame, as text.
func hostedToolResult(f frame) (content string, isError bool, ok bool) {
	var blocks []struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
		IsError bool            `json:"is_error"`
	}
	if f.Type != "user" || json.Unmarshal(f.Message.Content, &blocks) != nil {
		return "", false, false
	}
	for _, b := range blocks {
		if b.Type == "tool_result" {
			var s string
			if json.Unmarshal(b.Content, &s) != nil {
				s = string(b.Content)
			}
			return s, b.IsError, true
		}
	}
	return "", false, false
}

// allow and deny are the control_response frames a host writes to answer a
// can_use_tool request.
func allow(requestID string, input any, extra map[string]any) map[string]any {
	resp := map[string]any{"behavior": "allow", "updatedInput": input}
	for k, v := range extra {
		resp[k] = v
	}
	return controlResponse(requestID, resp)
}

func deny(requestID, message string, interrupt bool) map[string]any {
	resp := map[string]any{"behavior": "deny", "message": message}
	if interrupt {
		resp["interrupt"] = true
	}
	return controlResponse(requestID, resp)
}

func controlResponse(requestID string, resp map[string]any) map[string]any {
	return map[string]any{"type": "control_response",
		"response": map[string]any{"subtype": "success", "request_id": requestID, "response": resp}}
}

func userTurn(text string) map[string]any {
	return map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}}
}

const hostedMarker = `python3 -c "print('hosted-7f3a')"`

// claudeHosted drives one Claude Code session the way a host would.
type claudeHosted struct {
	t *testing.T
	s *claudecli.Session
}

// next waits for the next frame after the n-th event that satisfies pred.
func (c claudeHosted) next(ctx context.Context, after int, pred func(frame) bool) (frame, int) {
	c.t.Helper()
	n := 0
	var idx int
	ev, err := c.s.WaitEvent(ctx, func(e claudecli.Event) bool {
		n++
		if n <= after {
			return false
		}
		var f frame
		if e.Decode(&f) != nil || !pred(f) {
			return false
		}
		idx = n
		return true
	})
	if err != nil {
		c.t.Fatalf("waiting for a frame after event %d: %v\nstderr: %s", after, err, c.s.Stderr())
	}
	return decodeFrame(c.t, ev.Raw), idx
}

func (c claudeHosted) send(v any) int {
	c.t.Helper()
	n := len(c.s.Events())
	if err := c.s.WriteJSON(v); err != nil {
		c.t.Fatal(err)
	}
	return n
}

func is(typ, subtype string) func(frame) bool {
	return func(f frame) bool { return f.Type == typ && (subtype == "" || f.Subtype == subtype) }
}

func canUseTool(f frame) bool {
	return f.Type == "control_request" && f.Request.Subtype == "can_use_tool"
}

func isToolResult(f frame) bool { _, _, ok := hostedToolResult(f); return ok }

func TestClaudeCodeHostedOverStreamJSONAsksTheHostAndObeysItsAnswers(t *testing.T) {
	bin := needInterop(t)
	askInput := `{"questions":[{"question":"Which color?","header":"Color","options":[{"label":"red","description":"warm"},{"label":"blue","description":"cool"}],"multiSelect":false}]}`
	fa := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools("runtool", []fakeanthropic.Call{{Tool: "Bash", Input: `{"command":` + jsonString(hostedMarker) + `,"description":"print a marker"}`}}, "tool-done"),
		fakeanthropic.CallTools("askq", []fakeanthropic.Call{{Tool: "AskUserQuestion", Input: askInput}}, "ask-done"),
		fakeanthropic.CallTools("plan", []fakeanthropic.Call{{Tool: "ExitPlanMode", Input: `{"plan":"1. do it"}`}}, "plan-done"),
	))
	s := claudecli.Start(t, claudecli.Options{Bin: bin, APIURL: fa.URL(), Args: []string{"--permission-prompt-tool", "stdio"}})
	c := claudeHosted{t, s}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	if _, err := s.Control(ctx, map[string]any{"subtype": "initialize"}); err != nil {
		t.Fatalf("initialize is answered with success: %v", err)
	}

	// Turn 1: the prompt, then an allow that rewrites the command.
	at := c.send(userTurn("please runtool"))
	initF, _ := c.next(ctx, at, is("system", "init"))
	if initF.SessionID == "" || initF.Model == "" || initF.PermissionMode != "default" || !slices.Contains(initF.Tools, "Bash") || !slices.Contains(initF.Tools, "AskUserQuestion") {
		t.Errorf("system/init after the first user line has session_id, model, permissionMode default and the tools: %+v", initF)
	}
	req, at := c.next(ctx, at, canUseTool)
	if req.RequestID == "" || req.Request.ToolName != "Bash" || req.Request.Input["command"] != hostedMarker ||
		!strings.HasPrefix(req.Request.ToolUseID, "toolu_") || req.Request.DecisionReason == "" || len(req.Request.PermissionSuggestions) != 1 {
		t.Errorf("can_use_tool names the tool, its input, its tool_use_id, a reason and one suggestion: %+v", req.Request)
	}
	var sugg struct {
		Type        string `json:"type"`
		Behavior    string `json:"behavior"`
		Destination string `json:"destination"`
	}
	if len(req.Request.PermissionSuggestions) > 0 {
		json.Unmarshal(req.Request.PermissionSuggestions[0], &sugg)
	}
	if sugg.Type != "addRules" || sugg.Behavior != "allow" || sugg.Destination != "localSettings" {
		t.Errorf("the suggestion adds an allow rule to localSettings: %+v", sugg)
	}
	c.send(allow(req.RequestID, map[string]any{"command": `python3 -c "print('rewritten-by-host')"`, "description": "x"}, nil))
	res, at := c.next(ctx, at, isToolResult)
	if out, isErr, _ := hostedToolResult(res); out != "rewritten-by-host" || isErr {
		t.Errorf("an allow with updatedInput runs the host's input: got %q (error %v)", out, isErr)
	}
	c.next(ctx, at, is("result", "success"))

	// Turn 2: a deny with a message is the tool's error; the turn goes on.
	at = c.send(userTurn("runtool again"))
	req, at = c.next(ctx, at, canUseTool)
	c.send(deny(req.RequestID, "no from the host", false))
	res, at = c.next(ctx, at, isToolResult)
	if out, isErr, _ := hostedToolResult(res); out != "no from the host" || !isErr {
		t.Errorf("a deny's message is the tool_result, as an error: got %q (error %v)", out, isErr)
	}
	if r, _ := c.next(ctx, at, is("result", "")); r.Subtype != "success" || len(r.PermissionDenials) != 1 {
		t.Errorf("the turn ends in success listing one permission denial: %+v", r)
	}

	// Turn 3: a deny with interrupt ends the turn.
	at = c.send(userTurn("runtool thrice"))
	req, at = c.next(ctx, at, canUseTool)
	c.send(deny(req.RequestID, "stop", true))
	if r, _ := c.next(ctx, at, is("result", "")); r.Subtype != "error_during_execution" || r.TerminalReason != "aborted_tools" || !r.IsError {
		t.Errorf("a deny with interrupt ends the turn as error_during_execution/aborted_tools: %+v", r)
	}

	// Modes and models.
	if got, err := s.Control(ctx, map[string]any{"subtype": "set_permission_mode", "mode": "acceptEdits"}); err != nil || string(got) != `{"mode":"acceptEdits"}` {
		t.Errorf("set_permission_mode answers {mode}: %s, %v", got, err)
	}
	if _, err := s.Control(ctx, map[string]any{"subtype": "set_permission_mode", "mode": "bogus"}); err == nil || !strings.Contains(err.Error(), "must be one of acceptEdits, auto, bypassPermissions, default, dontAsk, plan") {
		t.Errorf("an unknown mode is an error response naming the modes: %v", err)
	}
	if got, err := s.Control(ctx, map[string]any{"subtype": "set_model", "model": "claude-sonnet-4-5"}); err != nil || string(got) != `{"model":"claude-sonnet-4-5"}` {
		t.Errorf("set_model answers {model}: %s, %v", got, err)
	}
	at = c.send(userTurn("hello"))
	if f, _ := c.next(ctx, at, is("system", "init")); f.Model != "claude-sonnet-4-5" || f.PermissionMode != "acceptEdits" {
		t.Errorf("the next turn's init shows the new model and mode: %q %q", f.Model, f.PermissionMode)
	}
	c.next(ctx, at, is("result", ""))

	// An interrupt while a prompt is pending withdraws the prompt.
	s.Control(ctx, map[string]any{"subtype": "set_permission_mode", "mode": "default"})
	at = c.send(userTurn("runtool and wait"))
	req, at = c.next(ctx, at, canUseTool)
	if got, err := s.Control(ctx, map[string]any{"subtype": "interrupt"}); err != nil || string(got) != `{"still_queued":[]}` {
		t.Errorf("interrupt answers {still_queued: []}: %s, %v", got, err)
	}
	if f, _ := c.next(ctx, at, is("control_cancel_request", "")); f.RequestID != req.RequestID {
		t.Errorf("the CLI withdraws the pending prompt with control_cancel_request %s, got %s", req.RequestID, f.RequestID)
	}
	if r, _ := c.next(ctx, at, is("result", "")); r.Subtype != "error_during_execution" {
		t.Errorf("the interrupted turn ends as error_during_execution: %+v", r)
	}

	// AskUserQuestion: a prompt that needs a person; the answers go in updatedInput.
	at = c.send(userTurn("askq now"))
	req, at = c.next(ctx, at, canUseTool)
	if req.Request.ToolName != "AskUserQuestion" || !req.Request.RequiresUserInteraction || req.Request.Input["questions"] == nil {
		t.Errorf("AskUserQuestion comes as can_use_tool with requires_user_interaction and the questions: %+v", req.Request)
	}
	input := req.Request.Input
	input["answers"] = map[string]any{"Which color?": "blue"}
	c.send(allow(req.RequestID, input, nil))
	res, at = c.next(ctx, at, isToolResult)
	if out, _, _ := hostedToolResult(res); !strings.Contains(out, `"Which color?"="blue"`) {
		t.Errorf("the answers reach the model: %q", out)
	}
	c.next(ctx, at, is("result", ""))

	// ExitPlanMode, in plan mode.
	s.Control(ctx, map[string]any{"subtype": "set_permission_mode", "mode": "plan"})
	at = c.send(userTurn("plan it"))
	req, at = c.next(ctx, at, canUseTool)
	if req.Request.ToolName != "ExitPlanMode" || !req.Request.RequiresUserInteraction || len(req.Request.Input) != 0 {
		t.Errorf("ExitPlanMode comes as can_use_tool with requires_user_interaction and an empty input: %+v", req.Request)
	}
	c.send(allow(req.RequestID, map[string]any{"plan": "1. the host's plan"}, nil))
	if f, _ := c.next(ctx, at, is("system", "status")); f.PermissionMode != "default" {
		t.Errorf("allowing the plan leaves plan mode: %+v", f)
	}
	res, at = c.next(ctx, at, isToolResult)
	if out, _, _ := hostedToolResult(res); !strings.Contains(out, "User has approved your plan") || !strings.Contains(out, "1. the host's plan") {
		t.Errorf("the model is told the host's plan was approved: %q", out)
	}
	c.next(ctx, at, is("result", ""))

	// stdin EOF with a prompt pending: the prompt fails, the turn ends, exit 0.
	at = c.send(userTurn("runtool last"))
	c.next(ctx, at, canUseTool)
	if err := s.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	res, _ = c.next(ctx, at, isToolResult)
	if out, isErr, _ := hostedToolResult(res); !isErr || !strings.Contains(out, "Tool permission stream closed before response received") {
		t.Errorf("EOF with a prompt pending fails the tool: %q", out)
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("the CLI did not exit after stdin EOF")
	}
	if code := s.ExitCode(); code != 0 {
		t.Errorf("exit code after stdin EOF: %d, want 0", code)
	}
}

func TestClaudeCodeHostedResumesItsSessionFromTheTranscript(t *testing.T) {
	bin := needInterop(t)
	fa := fakeanthropic.Start(t, fakeanthropic.Always(fakeanthropic.Text("ok")))
	home, cwd := t.TempDir(), t.TempDir()
	const id = "0f0e0d0c-0b0a-4908-8706-050403020100"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func(text string, args ...string) frame {
		s := claudecli.Start(t, claudecli.Options{Bin: bin, APIURL: fa.URL(), Home: home, Cwd: cwd, Args: append([]string{"--permission-prompt-tool", "stdio"}, args...)})
		res, err := s.Turn(ctx, text)
		if err != nil {
			t.Fatal(err)
		}
		s.CloseStdin()
		<-s.Done()
		return decodeFrame(t, res.Raw)
	}
	if r := run("remember hosted-marker-one", "--session-id", id); r.SessionID != id {
		t.Errorf("--session-id names the session: %s", r.SessionID)
	}
	transcript := filepath.Join(home, ".claude", "projects", strings.ReplaceAll(cwd, "/", "-"), id+".jsonl")
	if _, err := os.Stat(transcript); err != nil {
		t.Errorf("the transcript is HOME/.claude/projects/<cwd with / as ->/<id>.jsonl: %v", err)
	}
	if r := run("second life", "--resume", id); r.SessionID != id {
		t.Errorf("--resume keeps the session id: %s", r.SessionID)
	}
	last, err := fa.WaitContains(ctx, "second life")
	if err != nil || !last.Contains("hosted-marker-one") {
		t.Errorf("the resumed CLI sends the earlier turn to the model (%v)", err)
	}
}

func TestClaudeCodeHostedKeepsAnAlwaysAllowForTheRestOfTheSession(t *testing.T) {
	bin := needInterop(t)
	call := `{"command":` + jsonString(hostedMarker) + `,"description":"print a marker"}`
	fa := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools("runtool", []fakeanthropic.Call{{Tool: "Bash", Input: call}}, "tool-done")))
	s := claudecli.Start(t, claudecli.Options{Bin: bin, APIURL: fa.URL(), Args: []string{"--permission-prompt-tool", "stdio"}})
	c := claudeHosted{t, s}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	at := c.send(userTurn("runtool once"))
	req, at := c.next(ctx, at, canUseTool)
	var rule map[string]any // the suggestion, kept for this session only
	json.Unmarshal(req.Request.PermissionSuggestions[0], &rule)
	rule["destination"] = "session"
	c.send(allow(req.RequestID, req.Request.Input, map[string]any{"updatedPermissions": []any{rule}}))
	c.next(ctx, at, is("result", ""))

	at = c.send(userTurn("runtool twice"))
	_, end := c.next(ctx, at, is("result", ""))
	asked := 0
	ran := ""
	for _, e := range s.Events()[at:end] {
		f := decodeFrame(t, e.Raw)
		if canUseTool(f) {
			asked++
		}
		if out, _, ok := hostedToolResult(f); ok {
			ran = out
		}
	}
	if asked != 0 || ran != "hosted-7f3a" {
		t.Errorf("the same command runs again without a prompt: %d prompts, tool output %q", asked, ran)
	}
}

func TestClaudeCodeHostedKilledWithAPromptPendingResumesWithTheTurn(t *testing.T) {
	bin := needInterop(t)
	fa := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools("runtool", []fakeanthropic.Call{{Tool: "Bash", Input: `{"command":` + jsonString(hostedMarker) + `}`}}, "tool-done")))
	home, cwd := t.TempDir(), t.TempDir()
	const id = "0f0e0d0c-0b0a-4908-8706-050403020102"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := claudecli.Options{Bin: bin, APIURL: fa.URL(), Home: home, Cwd: cwd, Args: []string{"--permission-prompt-tool", "stdio", "--session-id", id}}
	s := claudecli.Start(t, opts)
	c := claudeHosted{t, s}
	req, _ := c.next(ctx, c.send(userTurn("runtool before the crash")), canUseTool)
	// The CLI appends to its transcript from a queue drained every 100 ms
	// (see the findings): wait until the pending call is written, then crash.
	transcript := filepath.Join(home, ".claude", "projects", strings.ReplaceAll(cwd, "/", "-"), id+".jsonl")
	for {
		if b, _ := os.ReadFile(transcript); strings.Contains(string(b), `"id":"`+req.Request.ToolUseID+`"`) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the transcript never held the pending call %s", req.Request.ToolUseID)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}

	opts.Args = []string{"--permission-prompt-tool", "stdio", "--resume", id}
	s = claudecli.Start(t, opts)
	if _, err := s.Turn(ctx, "after the crash"); err != nil {
		t.Fatal(err)
	}
	last, err := fa.WaitContains(ctx, "after the crash")
	if err != nil || !last.Contains("runtool before the crash") {
		t.Errorf("the turn accepted before kill -9 is in the resumed history (%v)", err)
	}
	if res, ok := last.ToolResult(req.Request.ToolUseID); !ok || !res.IsError ||
		!strings.Contains(last.Text(), "[Tool call interrupted: the session ended before this call's result was recorded, so its outcome is unknown.") {
		t.Errorf("the call that was pending comes back as an interrupted, failed tool_result: %+v %v", res, ok)
	}
	for _, e := range s.Events() {
		if f := decodeFrame(t, e.Raw); canUseTool(f) {
			t.Errorf("the resumed CLI asks again for the call that was pending: %s", e.Raw)
		}
	}
	s.CloseStdin()
}

func TestClaudeCodeHostedExitsOneOnALineThatIsNotJSON(t *testing.T) {
	bin := needInterop(t)
	fa := fakeanthropic.Start(t, fakeanthropic.Always(fakeanthropic.Text("ok")))
	s := claudecli.Start(t, claudecli.Options{Bin: bin, APIURL: fa.URL(), Args: []string{"--permission-prompt-tool", "stdio"}})
	if err := s.WriteRaw([]byte("not json at all")); err != nil {
		t.Fatal(err)
	}
	s.CloseStdin() // also tells Stop the exit is expected
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("the CLI did not exit")
	}
	if code := s.ExitCode(); code != 1 || !strings.Contains(s.Stderr(), "Error parsing streaming input line") {
		t.Errorf("exit code %d, want 1, and the parse error on stderr: %q", code, s.Stderr())
	}
}

func TestClaudeCodeHostedExitsOneAtStartOnAResumeOfAnUnknownSession(t *testing.T) {
	bin := needInterop(t)
	fa := fakeanthropic.Start(t, fakeanthropic.Always(fakeanthropic.Text("ok")))
	const id = "0f0e0d0c-0b0a-4908-8706-0504030201ff"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--resume", id)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "ANTHROPIC_API_KEY=" + claudecli.DummyAPIKey,
		"ANTHROPIC_BASE_URL=" + fa.URL(), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	out, err := cmd.Output() // stdin is /dev/null: the CLI does not wait for a line
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1", err)
	}
	var r struct {
		Type    string   `json:"type"`
		Subtype string   `json:"subtype"`
		Errors  []string `json:"errors"`
	}
	json.Unmarshal(bytes.TrimSpace(out), &r)
	if r.Type != "result" || r.Subtype != "error_during_execution" || !slices.Contains(r.Errors, "No conversation found with session ID: "+id) {
		t.Errorf("stdout is one error result naming the id: %s", out)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
