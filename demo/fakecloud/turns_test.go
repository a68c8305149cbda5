package fakecloud

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/sessiongateway/gateway/leg/remote/wire"
)

// until reads messages off the socket up to and including the first that
// stop accepts.
func until(t *testing.T, c *websocket.Conn, stop func(m wire.Message) bool) []wire.Message {
	t.Helper()
	var out []wire.Message
	for {
		m := next(t, c)
		out = append(out, m)
		if stop(m) {
			return out
		}
	}
}

func isResult(m wire.Message) bool { return m.Kind == wire.KindResult }

// checkTurn checks the last streamed turn in msgs (the copies of the last
// assistant message id) as the service streams it, and returns the text the
// copies fold into.
func checkTurn(t *testing.T, msgs []wire.Message) (text string, model string) {
	t.Helper()
	lastID := ""
	for _, m := range msgs {
		if m.Kind == wire.KindAssistant {
			lastID = m.Assistant.ID
		}
	}
	var copies []wire.Message
	for _, m := range msgs {
		if m.Kind == wire.KindAssistant && m.Assistant.ID == lastID {
			copies = append(copies, m)
		}
	}
	if len(copies) < 2 {
		t.Fatalf("%d assistant copies", len(copies))
	}
	first := copies[0].Assistant
	if len(first.Content.Blocks) != 1 || first.Content.Blocks[0].Kind != wire.BlockThinking || first.StopReason != "" {
		t.Fatalf("the first copy is not a lone thinking block: %s", copies[0].Raw)
	}
	merged := *first
	prevText, prevOut := "", int64(-1)
	for i, c := range copies {
		a := c.Assistant
		last := i == len(copies)-1
		if (a.StopReason == "end_turn") != last || (!last && a.StopReason != "") {
			t.Fatalf("copy %d has stop_reason %q", i, a.StopReason)
		}
		if a.Usage == nil || a.Usage.OutputTokens < prevOut {
			t.Fatalf("copy %d usage %+v after %d output tokens", i, a.Usage, prevOut)
		}
		prevOut = a.Usage.OutputTokens
		if i > 0 {
			txt := a.Content.Text()
			if !strings.HasPrefix(txt, prevText) {
				t.Fatalf("copy %d text %q does not grow from %q", i, txt, prevText)
			}
			prevText = txt
		}
		merged = wire.MergeAssistant(merged, *a)
	}
	if len(merged.Content.Blocks) != 2 || merged.Content.Blocks[0].Kind != wire.BlockThinking {
		t.Fatalf("the copies fold into %+v", merged.Content.Blocks)
	}
	return merged.Content.Text(), merged.Model
}

func TestStreamTurn(t *testing.T) {
	s := start(t)
	tests := []struct {
		name   string
		turn   Turn
		copies int // text copies
		model  string
	}{
		{"a turn streams its text in the asked number of growing copies", Turn{Text: "hello world", Chunks: 4, Thinking: "let me see"}, 4, defaultModel},
		{"without Chunks the text comes in three copies", Turn{Text: "abcdefghi", Model: "claude-opus-4-6"}, 3, "claude-opus-4-6"},
		{"a short text never streams more copies than it has characters", Turn{Text: "hé", Chunks: 9}, 2, defaultModel},
		{"an empty text still ends with one end_turn copy and a result", Turn{}, 1, defaultModel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := s.CreateSession("turn")
			c := dial(t, s, id, false)
			uuids, err := s.StreamTurn(id, tc.turn)
			if err != nil {
				t.Fatal(err)
			}
			msgs := until(t, c, isResult)
			if len(msgs) != 1+tc.copies+1 || len(uuids) != len(msgs) {
				t.Fatalf("%d messages, %d uuids, want %d", len(msgs), len(uuids), 1+tc.copies+1)
			}
			for i, m := range msgs {
				if m.UUID != uuids[i] || m.SessionID != id || m.CreatedAt == "" {
					t.Fatalf("message %d: uuid %q (returned %q) session %q created %q", i, m.UUID, uuids[i], m.SessionID, m.CreatedAt)
				}
			}
			if th := msgs[0].Assistant.Content.Blocks[0]; th.Thinking != tc.turn.Thinking || th.Signature == "" {
				t.Fatalf("thinking block %+v", th)
			}
			text, model := checkTurn(t, msgs)
			res := msgs[len(msgs)-1].Result
			if text != tc.turn.Text || model != tc.model || res.Subtype != "success" || res.Result != tc.turn.Text || res.IsError {
				t.Fatalf("text %q model %q result %+v", text, model, res)
			}
		})
	}
	t.Run("a turn for an unknown session fails with a typed error", func(t *testing.T) {
		if _, err := s.StreamTurn("session_nope", Turn{Text: "x"}); !errors.Is(err, ErrNoSession) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestPrompt(t *testing.T) {
	s := start(t)
	tests := []struct {
		name  string
		spec  PromptSpec
		tool  string
		input string // a substring of the input
	}{
		{"an AskUserQuestion prompt carries the protocol's questions", AskPrompt(), "AskUserQuestion", `"multiSelect":true`},
		{"a Bash prompt carries the command", BashPrompt("go test ./..."), "Bash", `"command":"go test ./..."`},
		{"an ExitPlanMode prompt carries the plan", PlanPrompt("1. do it"), "ExitPlanMode", `"plan":"1. do it"`},
		{"a prompt for another tool gets an empty input", PromptSpec{Tool: "Read"}, "Read", `{}`},
		{"given ids are kept", PromptSpec{Tool: "Edit", RequestID: "req-x", ToolUseID: "toolu_x", Input: json.RawMessage(`{"file_path":"a"}`)}, "Edit", `"file_path":"a"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := s.CreateSession("prompt")
			c := dial(t, s, id, false)
			rid, err := s.Prompt(id, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			req, use := next(t, c), next(t, c)
			cr := req.ControlRequest
			if req.Kind != wire.KindControlRequest || cr.Subtype != wire.SubtypeCanUseTool || cr.RequestID != rid ||
				cr.ToolName != tc.tool || cr.ToolUseID == "" || cr.Description == "" || !strings.Contains(string(cr.Input), tc.input) {
				t.Fatalf("first the control_request, got %s", req.Raw)
			}
			if tc.spec.RequestID != "" && (rid != tc.spec.RequestID || cr.ToolUseID != tc.spec.ToolUseID) {
				t.Fatalf("ids %q %q", rid, cr.ToolUseID)
			}
			if use.Kind != wire.KindAssistant || len(use.Assistant.Content.Blocks) != 1 || use.Assistant.StopReason != "tool_use" {
				t.Fatalf("then the tool_use message, got %s", use.Raw)
			}
			b := use.Assistant.Content.Blocks[0]
			if b.Kind != wire.BlockToolUse || b.ID != cr.ToolUseID || b.Name != tc.tool || string(b.Input) != string(cr.Input) || b.CallerType != "direct" {
				t.Fatalf("tool_use block %+v", b)
			}
			if p := s.Permissions(id); len(p) != 1 || p[0].RequestID != rid {
				t.Fatalf("pending %+v", p)
			}
			if qs, err := cr.Questions(); err != nil || (tc.tool == "AskUserQuestion") != (len(qs) == 2) {
				t.Fatalf("questions %+v %v", qs, err)
			}
			ans := `{"events":[{"type":"control_response","response":{"subtype":"success","request_id":"` + rid + `","response":{"behavior":"allow"}}}]}`
			do(t, headers(), "POST", s.URL()+"/v1/sessions/"+id+"/events", ans, nil)
			if a := s.Answers(id); len(a) != 1 || !a[0].Matched || len(s.Permissions(id)) != 0 {
				t.Fatalf("answers %+v pending %+v", a, s.Permissions(id))
			}
		})
	}
	t.Run("a bad spec is refused with a typed error", func(t *testing.T) {
		id := s.CreateSession("bad")
		for _, p := range []PromptSpec{{}, {Tool: "Bash", Input: json.RawMessage(`[1]`)}, {Tool: "Bash", Input: json.RawMessage(`nul`)}} {
			if _, err := s.Prompt(id, p); !errors.Is(err, ErrBadPrompt) {
				t.Errorf("%+v: %v", p, err)
			}
		}
		if _, err := s.Prompt("session_nope", BashPrompt("ls")); !errors.Is(err, ErrNoSession) {
			t.Errorf("unknown session: %v", err)
		}
	})
}

func TestCancelPrompt(t *testing.T) {
	s := start(t)
	id := s.CreateSession("cancel")
	c := dial(t, s, id, false)
	rid, err := s.Prompt(id, BashPrompt("ls"))
	if err != nil {
		t.Fatal(err)
	}
	next(t, c)
	next(t, c)
	tests := []struct {
		name    string
		session string
		want    error
	}{
		{"a pending prompt is withdrawn", id, nil},
		{"a prompt no longer pending cannot be withdrawn again", id, ErrNoPrompt},
		{"a prompt in an unknown session cannot be withdrawn", "session_nope", ErrNoSession},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.CancelPrompt(tc.session, rid); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if m := next(t, c); m.Kind != wire.KindControlCancelRequest || m.Cancel.RequestID != rid {
		t.Fatalf("streamed %s", m.Raw)
	}
	if len(s.Permissions(id)) != 0 {
		t.Fatal("still pending")
	}
}

func ExampleServer_StreamTurn() {
	s, err := Listen(Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	id := s.CreateSession("example")
	uuids, _ := s.StreamTurn(id, Turn{Text: "hello", Chunks: 2})
	fmt.Println(len(uuids), "events: thinking, two text copies, result")
	// Output: 4 events: thinking, two text copies, result
}
