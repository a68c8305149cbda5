package fakecloud

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sessiongateway/gateway/internal/clock"
)

// echoQueue bounds what waits for a session's echo worker: its inbox, and
// the user messages that arrive while a turn runs. When either is full the
// event is still stored and streamed, but the worker never sees it (logged).
const echoQueue = 64

// job is one event for the echo worker.
type job struct {
	m Message
	// ack: answer a control_request with a stored control_response. Posted
	// requests want one; those sent over the WebSocket were answered there.
	ack bool
}

// outcome is how a wait inside a turn ended.
type outcome uint8

const (
	outcomeDone        outcome = iota + 1 // the wait ran out or the prompt was answered
	outcomeInterrupted                    // an interrupt, or the prompt was withdrawn
	outcomeGone                           // the server is closing
)

// echoWorker is one session's scripted agent (Options.Echo). It runs one
// turn at a time; everything it emits goes through the session's store.
type echoWorker struct {
	s       *Server
	id      string
	in      chan job
	backlog []Message // user messages that came during a turn
	model   string
	mode    string // the permission mode last set; recorded, not acted on
}

// toWorker hands m to the session's echo worker, starting it on first use;
// s.mu must be held. Without Echo it does nothing.
func (s *Server) toWorker(ss *session, m Message, ack bool) {
	if !s.opts.Echo {
		return
	}
	switch m.Type {
	case "user":
		if m.User.Content.Text() == "" {
			return // tool results and attachments are not prompts
		}
	case "control_request":
	case "control_response", "control_cancel_request":
		if ss.worker == nil {
			return // no turn can be waiting for it
		}
	default:
		return
	}
	if ss.worker == nil {
		if !s.track() {
			return
		}
		w := &echoWorker{s: s, id: ss.ID, in: make(chan job, echoQueue), model: defaultModel}
		ss.worker = w
		go func() {
			defer s.wg.Done()
			w.run(s.ctx)
		}()
	}
	select {
	case ss.worker.in <- job{m, ack}:
	default:
		s.opts.Logf("fakecloud: %s: echo worker busy, %s not seen", ss.ID, m.Type)
	}
}

func (w *echoWorker) run(ctx context.Context) {
	for {
		var j job
		if len(w.backlog) > 0 {
			j, w.backlog = job{m: w.backlog[0]}, w.backlog[1:]
		} else {
			select {
			case <-ctx.Done():
				return
			case j = <-w.in:
			}
		}
		switch j.m.Type {
		case "user":
			if w.turn(ctx, j.m.User.Content.Text()) == outcomeGone {
				return
			}
		case "control_request":
			w.control(j) // an interrupt with no turn running is only answered
		}
		// Answers and cancels with no turn waiting for them change nothing.
	}
}

// emit stores and streams one line from the worker.
func (w *echoWorker) emit(line []byte) {
	if _, err := w.s.emitAll(w.id, [][]byte{line}); err != nil {
		w.s.opts.Logf("fakecloud: %s: echo: %v", w.id, err)
	}
}

// control applies a control request (unless RefuseControls names its
// subtype) and answers it if asked; it reports whether the request was an
// interrupt that took.
func (w *echoWorker) control(j job) bool {
	req := j.m.ControlRequest
	w.s.mu.Lock()
	_, refused := w.s.sessions[w.id].refuse[req.Subtype]
	w.s.mu.Unlock()
	switch subtype := req.Subtype; {
	case refused:
	case subtype == "set_model":
		w.model = req.Model
		if w.model == "" {
			w.model = defaultModel
		}
	case subtype == "set_permission_mode":
		w.mode = req.Mode
	}
	if j.ack {
		w.s.mu.Lock()
		ss := w.s.sessions[w.id]
		line := w.s.controlResponse(ss, req)
		w.s.mu.Unlock()
		w.emit(line)
	}
	return req.Subtype == "interrupt" && !refused
}

// wait runs the inbox until done fires (nil: never), an answer to requestID
// arrives (returned), an interrupt or withdrawal, or the end. User messages
// are kept for later.
func (w *echoWorker) wait(ctx context.Context, done <-chan struct{}, requestID string) (*ControlResponse, outcome) {
	for {
		select {
		case <-ctx.Done():
			return nil, outcomeGone
		case <-done:
			return nil, outcomeDone
		case j := <-w.in:
			m := j.m
			switch m.Type {
			case "user":
				if len(w.backlog) >= echoQueue {
					w.s.opts.Logf("fakecloud: %s: echo backlog full, user message not seen", w.id)
					continue
				}
				w.backlog = append(w.backlog, m)
			case "control_request":
				if w.control(j) {
					return nil, outcomeInterrupted
				}
			case "control_response":
				if requestID != "" && m.ControlResponse.RequestID == requestID {
					return m.ControlResponse, outcomeDone
				}
			case "control_cancel_request":
				if requestID != "" && m.RequestID == requestID {
					return nil, outcomeInterrupted
				}
			}
		}
	}
}

// interrupted ends a turn the way an interrupted turn ends.
func (w *echoWorker) interrupted() {
	w.emit(resultLine("error_during_execution", "", true, nil, 0))
}

// turn answers one user message.
func (w *echoWorker) turn(ctx context.Context, text string) outcome {
	text = strings.TrimSpace(text)
	var spec PromptSpec
	switch {
	case strings.HasPrefix(text, "ask "):
		qs := SeedQuestions()
		qs[0] = Question{Question: strings.TrimSpace(text[len("ask "):]), Header: "Question",
			Options: []Option{{Label: "Yes"}, {Label: "No"}}}
		spec = AskPrompt(qs...)
	case strings.HasPrefix(text, "bash "):
		spec = BashPrompt(strings.TrimSpace(text[len("bash "):]))
	case text == "plan" || strings.HasPrefix(text, "plan "):
		spec = PlanPrompt("1. Echo the request\n2. Stream the reply\n3. End the turn")
	default:
		return w.stream(ctx, Turn{Text: "echo: " + text})
	}
	spec.Model = w.model
	spec, err := spec.defaults()
	if err != nil { // our own specs always pass
		w.s.opts.Logf("fakecloud: %s: echo: %v", w.id, err)
		return outcomeDone
	}
	if _, err := w.s.emitAll(w.id, promptLines(spec)); err != nil {
		w.s.opts.Logf("fakecloud: %s: echo: %v", w.id, err)
		return outcomeDone
	}
	answer, out := w.wait(ctx, nil, spec.RequestID)
	switch out {
	case outcomeGone:
		return out
	case outcomeInterrupted:
		w.s.mu.Lock()
		pending := slicesContainsRequest(w.s.sessions[w.id].pending, spec.RequestID)
		w.s.mu.Unlock()
		if pending {
			w.emit(mustJSON(map[string]any{"type": "control_cancel_request", "request_id": spec.RequestID}))
		}
		w.interrupted()
		return outcomeDone
	}
	reply, result := w.outcome(spec, answer)
	w.emit(result)
	return w.stream(ctx, Turn{Text: reply})
}

// outcome turns a prompt's answer into the tool_result user event and the
// text of the reply.
func (w *echoWorker) outcome(spec PromptSpec, a *ControlResponse) (reply string, toolResult []byte) {
	d := a.Decision
	if a.Subtype == "error" || d == nil || d.Behavior != "allow" {
		msg := a.Error
		if d != nil && d.Message != "" {
			msg = d.Message
		}
		return "denied: " + msg, toolResultLine(spec.ToolUseID, "The user denied this tool use: "+msg, true, nil)
	}
	input := spec.Input
	if len(d.UpdatedInput) > 0 && string(d.UpdatedInput) != "null" {
		input = d.UpdatedInput
	}
	switch spec.Tool {
	case "AskUserQuestion":
		sel := selections(spec.Input, input)
		var in struct {
			Answers map[string]any `json:"answers"`
		}
		_ = json.Unmarshal(input, &in)
		meta := map[string]any{"questions": json.RawMessage(spec.Input), "answers": in.Answers}
		return "answers: " + sel, toolResultLine(spec.ToolUseID, "User answered: "+sel, false, meta)
	case "Bash":
		var in struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(input, &in)
		return "ran: " + in.Command, toolResultLine(spec.ToolUseID, "(fake output of "+in.Command+")", false,
			map[string]any{"stdout": "(fake output of " + in.Command + ")", "stderr": "", "interrupted": false})
	default:
		return "plan approved", toolResultLine(spec.ToolUseID, "User approved the plan", false, nil)
	}
}

// selections renders AskUserQuestion answers in question order:
// "Q1=A; Q2=B, C". A question without an answer shows "-".
func selections(questions, answered json.RawMessage) string {
	var q struct {
		Questions []Question `json:"questions"`
	}
	var a struct {
		Answers map[string]json.RawMessage `json:"answers"`
	}
	_ = json.Unmarshal(questions, &q)
	_ = json.Unmarshal(answered, &a)
	parts := make([]string, 0, len(q.Questions))
	for _, qq := range q.Questions {
		got := "-"
		raw := a.Answers[qq.Question]
		var one string
		var many []string
		switch {
		case json.Unmarshal(raw, &one) == nil:
			got = one
		case json.Unmarshal(raw, &many) == nil:
			got = strings.Join(many, ", ")
		}
		parts = append(parts, fmt.Sprintf("%s=%s", qq.Question, got))
	}
	return strings.Join(parts, "; ")
}

func toolResultLine(toolUseID, content string, isError bool, meta map[string]any) []byte {
	ev := map[string]any{
		"type": "user", "parent_tool_use_id": nil,
		"message": map[string]any{"role": "user", "content": []any{map[string]any{
			"type": "tool_result", "tool_use_id": toolUseID, "content": content, "is_error": isError,
		}}},
	}
	if meta != nil {
		ev["tool_use_result"] = meta
	}
	return mustJSON(ev)
}

// stream emits a turn, EchoPace apart; an interrupt between two copies ends
// it as interrupted instead.
func (w *echoWorker) stream(ctx context.Context, t Turn) outcome {
	t.Model = w.model
	for i, line := range turnLines(t) {
		if i > 0 && w.s.opts.EchoPace > 0 {
			ch, timer := clock.After(w.s.clock, w.s.opts.EchoPace)
			_, out := w.wait(ctx, ch, "")
			timer.Stop()
			switch out {
			case outcomeGone:
				return out
			case outcomeInterrupted:
				w.interrupted()
				return outcomeDone
			}
		}
		w.emit(line)
	}
	return outcomeDone
}
