package interop

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/interop/qwencli"
	"github.com/sessiongateway/gateway/testkit/fakeopenai"
)

// The Qwen Code half of interop/FINDINGS-hosted.md; the frame helpers are in
// hosted_findings_test.go.

// qwenHosted drives one Qwen Code session the way a host would.
type qwenHosted struct {
	t *testing.T
	h *qwencli.Headless
}

func (q qwenHosted) next(ctx context.Context, after int, pred func(frame) bool) (frame, int) {
	q.t.Helper()
	raw, i, err := q.h.WaitLine(ctx, after, func(l json.RawMessage) bool {
		var f frame
		return json.Unmarshal(l, &f) == nil && pred(f)
	})
	if err != nil {
		q.t.Fatalf("waiting for a frame after line %d: %v\nstderr: %s", after, err, q.h.Stderr())
	}
	return decodeFrame(q.t, raw), i + 1
}

func (q qwenHosted) send(v any) int {
	q.t.Helper()
	n := len(q.h.Lines())
	if err := q.h.WriteJSON(v); err != nil {
		q.t.Fatal(err)
	}
	return n
}

// control sends a control_request and returns its response's inner payload.
func (q qwenHosted) control(ctx context.Context, id string, req map[string]any) string {
	q.t.Helper()
	at := q.send(map[string]any{"type": "control_request", "request_id": id, "request": req})
	raw, _, err := q.h.WaitLine(ctx, at, func(l json.RawMessage) bool {
		var f frame
		return json.Unmarshal(l, &f) == nil && f.Type == "control_response" && strings.Contains(string(l), `"request_id":"`+id+`"`)
	})
	if err != nil {
		q.t.Fatalf("no control_response to %s: %v", id, err)
	}
	var r struct {
		Response struct {
			Subtype  string          `json:"subtype"`
			Response json.RawMessage `json:"response"`
		} `json:"response"`
	}
	json.Unmarshal(raw, &r)
	return r.Response.Subtype + " " + string(r.Response.Response)
}

func TestQwenCodeHostedOverStreamJSONAsksTheHostAfterInitialize(t *testing.T) {
	bin := needQwen(t)
	cmd := `{"command":` + jsonString(hostedMarker) + `,"description":"print a marker"}`
	fo := fakeopenai.Start(t, fakeopenai.Rules(fakeopenai.Text("ok"),
		fakeopenai.CallTools("runtool", []fakeopenai.FunctionCallSpec{{Name: "run_shell_command", Arguments: cmd}}, "tool-done")))
	h := qwencli.StartHeadless(t, qwencli.Options{Bin: bin, APIURL: fo.BaseURL(), ApprovalMode: qwencli.ModeDefault})
	q := qwenHosted{t, h}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// Without initialize the CLI never sends can_use_tool (the tool waits
	// forever; see the findings), so a host must send it first. Its
	// timeout.canUseTool shortens the 60 s wait for an answer.
	if got := q.control(ctx, "h-init", map[string]any{"subtype": "initialize", "timeout": map[string]any{"canUseTool": 3000}}); !strings.HasPrefix(got, `success {"subtype":"initialize","session_id":"`) || !strings.Contains(got, `"can_handle_can_use_tool":true`) {
		t.Errorf("initialize answers with the session id and capabilities: %s", got)
	}

	at := q.send(userTurn("please runtool"))
	initF, _ := q.next(ctx, at, is("system", "init"))
	if initF.SessionID == "" || initF.Model != "fake-model" || initF.QwenMode != "default" || !slices.Contains(initF.Tools, "run_shell_command") {
		t.Errorf("system/init has session_id, model, permission_mode and tools: %+v", initF)
	}
	req, at := q.next(ctx, at, canUseTool)
	if req.RequestID == "" || req.Request.ToolName != "run_shell_command" || req.Request.Input["command"] != hostedMarker || !strings.HasPrefix(req.Request.ToolUseID, "call_") || len(req.Request.PermissionSuggestions) != 2 {
		t.Errorf("can_use_tool names the tool, its input, its call id and two suggestions: %+v", req.Request)
	}
	c := map[string]any{"command": `python3 -c "print('rewritten-by-host')"`, "description": "x"}
	q.send(allow(req.RequestID, c, nil))
	res, at := q.next(ctx, at, isToolResult)
	if out, isErr, _ := hostedToolResult(res); out != "hosted-7f3a" || isErr {
		t.Errorf("an allow runs the model's shell command, ignoring updatedInput: got %q (error %v)", out, isErr)
	}
	q.next(ctx, at, is("result", "success"))

	at = q.send(userTurn("runtool again"))
	req, at = q.next(ctx, at, canUseTool)
	q.send(deny(req.RequestID, "no from the host", false))
	res, at = q.next(ctx, at, isToolResult)
	if out, isErr, _ := hostedToolResult(res); out != "[Operation Cancelled] Reason: no from the host" || !isErr {
		t.Errorf("a deny's message reaches the model as a cancelled tool: got %q (error %v)", out, isErr)
	}
	q.next(ctx, at, is("result", ""))

	at = q.send(userTurn("runtool unanswered"))
	q.next(ctx, at, canUseTool)
	res, at = q.next(ctx, at, isToolResult)
	if out, isErr, _ := hostedToolResult(res); out != "[Operation Cancelled] Reason: Error: Control request timeout" || !isErr {
		t.Errorf("an unanswered prompt is cancelled at the timeout: got %q (error %v)", out, isErr)
	}
	q.next(ctx, at, is("result", ""))

	for _, tc := range []struct{ id, subtype, key, value, want string }{
		{"h-mode", "set_permission_mode", "mode", "yolo", `success {"status":"updated","mode":"yolo"}`},
		{"h-model", "set_model", "model", "other-model", `success {"subtype":"set_model","model":"other-model"}`},
	} {
		req := map[string]any{"subtype": tc.subtype}
		if tc.key != "" {
			req[tc.key] = tc.value
		}
		if got := q.control(ctx, tc.id, req); got != tc.want {
			t.Errorf("%s answers %s, got %s", tc.subtype, tc.want, got)
		}
	}
	q.control(ctx, "h-mode2", map[string]any{"subtype": "set_permission_mode", "mode": "default"})

	// An interrupt while a prompt is pending cancels the tool and the turn.
	at = q.send(userTurn("runtool interrupted"))
	q.next(ctx, at, canUseTool)
	if got := q.control(ctx, "h-int", map[string]any{"subtype": "interrupt"}); got != `success {"subtype":"interrupt"}` {
		t.Errorf("interrupt answers {subtype: interrupt}, got %s", got)
	}
	res, at = q.next(ctx, at, isToolResult)
	if out, _, _ := hostedToolResult(res); out != "[Operation Cancelled] Reason: Error: Request aborted" {
		t.Errorf("the interrupted prompt's tool is cancelled: %q", out)
	}
	if r, _ := q.next(ctx, at, is("result", "")); r.Subtype != "error_during_execution" || !r.IsError {
		t.Errorf("the interrupted turn ends as error_during_execution: %+v", r)
	}

	// stdin EOF with a prompt pending: the tool is cancelled, then exit 0.
	at = q.send(userTurn("runtool at the end"))
	q.next(ctx, at, canUseTool)
	h.CloseStdin()
	res, _ = q.next(ctx, at, isToolResult)
	if out, _, _ := hostedToolResult(res); out != "[Operation Cancelled] Reason: Error: Input closed" {
		t.Errorf("EOF cancels the pending prompt's tool: %q", out)
	}
	select {
	case <-h.Done():
	case <-ctx.Done():
		t.Fatal("the CLI did not exit after stdin EOF")
	}
	if code := h.ExitCode(); code != 0 {
		t.Errorf("exit code after stdin EOF: %d, want 0", code)
	}
}

func TestQwenCodeHostedResumesItsSession(t *testing.T) {
	bin := needQwen(t)
	fo := fakeopenai.Start(t, fakeopenai.Always(fakeopenai.Text("ok")))
	o := qwencli.Options{Bin: bin, APIURL: fo.BaseURL(), QwenHome: t.TempDir(), Home: t.TempDir(), Cwd: t.TempDir()}
	const id = "0f0e0d0c-0b0a-4908-8706-050403020101"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	run := func(text string, args ...string) frame {
		o := o
		o.Args = args
		h := qwencli.StartHeadless(t, o)
		q := qwenHosted{t, h}
		r, _ := q.next(ctx, q.send(userTurn(text)), is("result", ""))
		h.CloseStdin()
		<-h.Done()
		return r
	}
	if r := run("remember hosted-marker-one", "--session-id", id); r.SessionID != id {
		t.Errorf("--session-id names the session: %s", r.SessionID)
	}
	transcript := filepath.Join(o.QwenHome, "projects", strings.ReplaceAll(o.Cwd, "/", "-"), "chats", id+".jsonl")
	if _, err := os.Stat(transcript); err != nil {
		t.Errorf("the transcript is QWEN_HOME/projects/<cwd with / as ->/chats/<id>.jsonl: %v", err)
	}
	if r := run("second life", "--resume", id); r.SessionID != id {
		t.Errorf("--resume keeps the session id: %s", r.SessionID)
	}
	last, err := fo.WaitContains(ctx, "second life")
	if err != nil || !last.Contains("hosted-marker-one") {
		t.Errorf("the resumed CLI sends the earlier turn to the model (%v)", err)
	}
}

func TestQwenCodeHostedKilledWithAPromptPendingResumesWithTheTurn(t *testing.T) {
	bin := needQwen(t)
	fo := fakeopenai.Start(t, fakeopenai.Rules(fakeopenai.Text("ok"),
		fakeopenai.CallTools("runtool", []fakeopenai.FunctionCallSpec{{Name: "run_shell_command", Arguments: `{"command":` + jsonString(hostedMarker) + `}`}}, "tool-done")))
	o := qwencli.Options{Bin: bin, APIURL: fo.BaseURL(), QwenHome: t.TempDir(), Home: t.TempDir(), Cwd: t.TempDir(), ApprovalMode: qwencli.ModeDefault}
	const id = "0f0e0d0c-0b0a-4908-8706-050403020103"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := func(args ...string) qwenHosted {
		o := o
		o.Args = args
		q := qwenHosted{t, qwencli.StartHeadless(t, o)}
		q.control(ctx, "h-init", map[string]any{"subtype": "initialize"})
		return q
	}
	q := start("--session-id", id)
	req, _ := q.next(ctx, q.send(userTurn("runtool before the crash")), canUseTool)
	transcript := filepath.Join(o.QwenHome, "projects", strings.ReplaceAll(o.Cwd, "/", "-"), "chats", id+".jsonl")
	for {
		if b, _ := os.ReadFile(transcript); strings.Contains(string(b), req.Request.ToolUseID) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the transcript never held the pending call %s", req.Request.ToolUseID)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := q.h.Kill(); err != nil {
		t.Fatal(err)
	}

	q = start("--resume", id)
	q.next(ctx, q.send(userTurn("after the crash")), is("result", ""))
	last, err := fo.WaitContains(ctx, "after the crash")
	if err != nil || !last.Contains("runtool before the crash") {
		t.Errorf("the turn accepted before kill -9 is in the resumed history (%v)", err)
	}
	if res, ok := last.ToolResult(req.Request.ToolUseID); !ok || !strings.Contains(res.Text(), "Tool execution result was not recorded — likely interrupted by network failure, abort, or process exit.") {
		t.Errorf("the call that was pending comes back with a tool message saying it was not recorded: %+v %v", res, ok)
	}
	for _, l := range q.h.Lines() {
		if f := decodeFrame(t, l); canUseTool(f) {
			t.Errorf("the resumed CLI asks again for the call that was pending: %s", l)
		}
	}
	q.h.CloseStdin()
}
