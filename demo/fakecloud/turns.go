package fakecloud

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// defaultModel names the model of scripted turns that name none.
const defaultModel = "claude-sonnet-4-6"

// defaultChunks is how many growing copies a turn's text is streamed in.
const defaultChunks = 3

// Turn is one scripted agent turn.
type Turn struct {
	// Text is the reply; the closing result carries it too.
	Text string
	// Chunks is how many copies the text is streamed in, each longer than
	// the last (default 3, at most one per character); the last copy has
	// stop_reason "end_turn".
	Chunks int
	// Thinking is the thinking block's text, sent first; often empty, as
	// the real one is (only its signature is sent).
	Thinking string
	// Model is the message's model (default claude-sonnet-4-6).
	Model string
}

// PromptSpec is one can_use_tool prompt for Prompt.
type PromptSpec struct {
	// Tool is the tool_name: AskUserQuestion, ExitPlanMode, Bash or any other.
	Tool string
	// Input is the tool input, a JSON object; nil gives the tool's default
	// (AskPrompt, BashPrompt and PlanPrompt show them).
	Input json.RawMessage
	// Description is the prompt's description; "" gives the tool's default.
	Description string
	// RequestID and ToolUseID are fresh ids when empty.
	RequestID string
	ToolUseID string
	// Model is the model of the assistant tool_use message (default claude-sonnet-4-6).
	Model string
	// Suggestions are the request's permission_suggestions, as Claude Code
	// offers them (SeedSuggestions); none when empty.
	Suggestions []json.RawMessage
}

// SeedSuggestions are the permission suggestions Claude Code offers with a
// Bash prompt for command: a rule that always allows it (in the local
// settings), a directory added for the session, and a mode switch.
func SeedSuggestions(command string) []json.RawMessage {
	rule := mustJSON(map[string]any{"type": "addRules", "rules": []map[string]string{{"toolName": "Bash", "ruleContent": command}},
		"behavior": "allow", "destination": "localSettings"})
	return []json.RawMessage{
		json.RawMessage(rule),
		json.RawMessage(`{"type":"addDirectories","directories":["/tmp/build"],"destination":"session"}`),
		json.RawMessage(`{"type":"setMode","mode":"acceptEdits","destination":"session"}`),
	}
}

// ErrBadPrompt: a PromptSpec without a tool or with an input that is not an object.
var ErrBadPrompt = errors.New("fakecloud: bad prompt spec")

// SeedQuestions are the AskUserQuestion questions of captured traffic: one
// single-select question (with a preview) and one multi-select question.
func SeedQuestions() []Question {
	return []Question{
		{Question: "Which approach?", Header: "Approach", Options: []Option{
			{Label: "Option A (Recommended)", Description: "Keep the current structure", Preview: "func a() {}"},
			{Label: "Option B", Description: "Start over"},
		}},
		{Question: "Which features?", Header: "Features", MultiSelect: true, Options: []Option{
			{Label: "Logging", Description: "Structured logs"},
			{Label: "Metrics", Description: "Prometheus metrics"},
		}},
	}
}

// AskPrompt is an AskUserQuestion prompt; no questions gives SeedQuestions.
func AskPrompt(qs ...Question) PromptSpec {
	if len(qs) == 0 {
		qs = SeedQuestions()
	}
	in, _ := json.Marshal(map[string]any{"questions": qs})
	return PromptSpec{Tool: "AskUserQuestion", Input: in}
}

// BashPrompt is a Bash prompt for command.
func BashPrompt(command string) PromptSpec {
	in, _ := json.Marshal(map[string]string{"command": command, "description": "Run " + command})
	return PromptSpec{Tool: "Bash", Input: in, Description: command}
}

// PlanPrompt is an ExitPlanMode prompt asking to approve plan.
func PlanPrompt(plan string) PromptSpec {
	in, _ := json.Marshal(map[string]string{"plan": plan})
	return PromptSpec{Tool: "ExitPlanMode", Input: in}
}

// defaults fills a spec's empty fields.
func (p PromptSpec) defaults() (PromptSpec, error) {
	if p.Tool == "" {
		return p, fmt.Errorf("%w: no tool name", ErrBadPrompt)
	}
	if p.Input == nil {
		switch p.Tool {
		case "AskUserQuestion":
			p.Input = AskPrompt().Input
		case "Bash":
			p.Input = BashPrompt("ls -la").Input
		case "ExitPlanMode":
			p.Input = PlanPrompt("1. Read the code\n2. Make the change\n3. Run the tests").Input
		default:
			p.Input = json.RawMessage(`{}`)
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(p.Input, &obj); err != nil || obj == nil {
		return p, fmt.Errorf("%w: input is not a JSON object", ErrBadPrompt)
	}
	if p.Description == "" {
		switch p.Tool {
		case "AskUserQuestion":
			p.Description = "Asks the user multiple choice questions to gather information, clarify ambiguity, understand preferences, make decisions or offer them choices."
		case "ExitPlanMode":
			p.Description = "Prompts the user to exit plan mode and start coding"
		default:
			p.Description = "Use " + p.Tool
		}
	}
	if p.RequestID == "" {
		p.RequestID = uuid.NewString()
	}
	if p.ToolUseID == "" {
		p.ToolUseID = "toolu_01fake" + randomHex()[:20]
	}
	if p.Model == "" {
		p.Model = defaultModel
	}
	return p, nil
}

// StreamTurn emits one streamed turn the way the service streams one
// (docs/protocols/claude-ai-remote.md#messages-on-the-live-channel): the same
// assistant message id several times (a thinking block first, then the text
// growing chunk by chunk with usage updated, the last copy with stop_reason
// "end_turn"), then a "result" carrying the text. It returns the uuids
// emitted, in order.
func (s *Server) StreamTurn(sessionID string, t Turn) ([]string, error) {
	return s.emitAll(sessionID, turnLines(t))
}

// Prompt emits a can_use_tool control_request, then the assistant message
// with the tool_use block of the same tool_use_id (the service's order), and
// leaves the prompt pending until a control_response is posted over HTTP or
// CancelPrompt withdraws it. It returns the request_id.
func (s *Server) Prompt(sessionID string, p PromptSpec) (string, error) {
	p, err := p.defaults()
	if err != nil {
		return "", err
	}
	if _, err := s.emitAll(sessionID, promptLines(p)); err != nil {
		return "", err
	}
	return p.RequestID, nil
}

// CancelPrompt withdraws a pending prompt with a control_cancel_request. An
// echo turn waiting on it ends as interrupted.
func (s *Server) CancelPrompt(sessionID, requestID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[sessionID]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNoSession, sessionID)
	}
	if !slicesContainsRequest(ss.pending, requestID) {
		return fmt.Errorf("%w: %s", ErrNoPrompt, requestID)
	}
	line := mustJSON(map[string]any{"type": "control_cancel_request", "request_id": requestID})
	m, err := decode(line)
	if err != nil {
		return err
	}
	if _, err := s.emitLocked(ss, line, m); err != nil {
		return err
	}
	s.toWorker(ss, m, false)
	return nil
}

func slicesContainsRequest(pending []ControlRequest, id string) bool {
	for _, p := range pending {
		if p.RequestID == id {
			return true
		}
	}
	return false
}

// emitAll emits lines one after the other under one lock, so no other
// event comes between them, and returns their uuids.
func (s *Server) emitAll(sessionID string, lines [][]byte) ([]string, error) {
	msgs := make([]Message, len(lines))
	for i, l := range lines {
		m, err := decode(l)
		if err != nil { // our own lines: a bug here, not a caller's error
			return nil, fmt.Errorf("%w: %v", ErrBadLine, err)
		}
		msgs[i] = m
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[sessionID]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoSession, sessionID)
	}
	ids := make([]string, 0, len(lines))
	for i, l := range lines {
		id, err := s.emitLocked(ss, l, msgs[i])
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own maps of plain values reach here
	}
	return b
}

func usage(out int) map[string]any {
	return map[string]any{
		"input_tokens": 12, "output_tokens": out, "cache_creation_input_tokens": 0,
		"cache_read_input_tokens": 0, "service_tier": "standard",
	}
}

func assistantLine(msgID, model string, block any, stop any, out int) []byte {
	return mustJSON(map[string]any{
		"type": "assistant", "parent_tool_use_id": nil,
		"message": map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage(out),
		},
	})
}

// resultLine ends a turn. denials lists refused tool calls, as the result's
// permission_denials.
func resultLine(subtype, text string, isError bool, denials []any, out int) []byte {
	if denials == nil {
		denials = []any{}
	}
	var stop any = "end_turn"
	if isError {
		stop = nil
	}
	return mustJSON(map[string]any{
		"type": "result", "subtype": subtype, "result": text, "is_error": isError,
		"duration_ms": 1200, "duration_api_ms": 900, "num_turns": 1, "total_cost_usd": 0.0012,
		"stop_reason": stop, "modelUsage": map[string]any{}, "permission_denials": denials,
		"usage": usage(out),
	})
}

// turnLines builds a streamed turn (see StreamTurn).
func turnLines(t Turn) [][]byte {
	model := t.Model
	if model == "" {
		model = defaultModel
	}
	runes := []rune(t.Text)
	chunks := t.Chunks
	if chunks <= 0 {
		chunks = defaultChunks
	}
	chunks = max(1, min(chunks, len(runes)))
	msgID := "msg_01fake" + randomHex()[:20]
	lines := [][]byte{assistantLine(msgID, model,
		map[string]any{"type": "thinking", "thinking": t.Thinking, "signature": "fakesig-" + randomHex()}, nil, 1)}
	out := 1
	for k := 1; k <= chunks; k++ {
		part := string(runes[:len(runes)*k/chunks])
		out = 1 + len(part)/4
		var stop any
		if k == chunks {
			stop = "end_turn"
		}
		lines = append(lines, assistantLine(msgID, model, map[string]any{"type": "text", "text": part}, stop, out))
	}
	return append(lines, resultLine("success", t.Text, false, nil, out))
}

// promptLines builds a prompt's control_request and tool_use message.
func promptLines(p PromptSpec) [][]byte {
	r := map[string]any{
		"subtype": "can_use_tool", "tool_name": p.Tool, "tool_use_id": p.ToolUseID,
		"description": p.Description, "input": p.Input,
	}
	if len(p.Suggestions) > 0 {
		r["permission_suggestions"] = p.Suggestions
	}
	req := mustJSON(map[string]any{"type": "control_request", "request_id": p.RequestID, "request": r})
	use := assistantLine("msg_01fake"+randomHex()[:20], p.Model, map[string]any{
		"type": "tool_use", "id": p.ToolUseID, "name": p.Tool, "input": p.Input,
		"caller": map[string]string{"type": "direct"},
	}, "tool_use", 20)
	return [][]byte{req, use}
}
