package fakeanthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/sessiongateway/gateway/testkit/recorder"
)

// maxBody caps a request body; Claude Code's first request (system prompt and
// every tool schema) is a few hundred KiB.
const maxBody = 32 << 20

// Server is a loopback fake of the Anthropic Messages API.
type Server struct {
	script Script
	logf   func(format string, args ...any)
	srv    *http.Server
	ln     net.Listener
	done   chan struct{} // closed when Serve returns

	mu     sync.Mutex
	closed bool
	nextID int // shared by both lists, so ids follow arrival order

	requests recorder.Recorder[Request] // every POST /v1/messages, in arrival order
	others   recorder.Recorder[Request] // every other request (count_tokens, unknown paths)
}

// Start runs a fake on 127.0.0.1 for the length of a test; t.Cleanup closes
// it. Requests to paths the fake does not know are logged with t.Logf and
// answered 404.
func Start(t testing.TB, script Script) *Server {
	t.Helper()
	s, err := Listen(script, t.Logf)
	if err != nil {
		t.Fatalf("fakeanthropic: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Listen runs a fake on 127.0.0.1 until Close. logf, if not nil, receives one
// line per unknown request.
func Listen(script Script, logf func(format string, args ...any)) (*Server, error) {
	if script == nil {
		script = Always(Text("ok"))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s := &Server{script: script, logf: logf, ln: ln, done: make(chan struct{})}
	s.srv = &http.Server{Handler: s}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln) // returns ErrServerClosed on Close
	}()
	return s, nil
}

// URL is the base URL to put in ANTHROPIC_BASE_URL.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server and waits for its goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	err := s.srv.Close()
	<-s.done
	return err
}

// Requests returns every /v1/messages request received so far.
func (s *Server) Requests() []Request { return s.requests.All() }

// Others returns every other request received so far: count_tokens and
// anything the fake does not know, bodies decoded as far as they go.
func (s *Server) Others() []Request { return s.others.All() }

// Contains reports whether any /v1/messages request so far contained sub.
func (s *Server) Contains(sub string) bool {
	return s.requests.Any(func(r Request) bool { return r.Contains(sub) })
}

// WaitRequest blocks until a /v1/messages request matching pred has arrived
// (looking at those already received first) or ctx ends.
func (s *Server) WaitRequest(ctx context.Context, pred func(Request) bool) (Request, error) {
	r, seen, err := s.requests.Wait(ctx, pred)
	if err != nil {
		return Request{}, fmt.Errorf("fakeanthropic: no matching request after %d: %w", seen, err)
	}
	return r, nil
}

// WaitContains waits for a request containing sub (see Request.Contains).
func (s *Server) WaitContains(ctx context.Context, sub string) (Request, error) {
	return s.WaitRequest(ctx, func(r Request) bool { return r.Contains(sub) })
}

// ServeHTTP routes the API paths Claude Code uses. The query (?beta=true) is
// ignored.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", err.Error())
		return
	}
	req, perr := ParseRequest(body)
	if perr != nil {
		req = Request{Raw: body}
	}
	req.Path, req.Header = r.URL.Path, r.Header.Clone()

	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		if perr != nil {
			s.record(&s.others, req)
			writeError(w, http.StatusBadRequest, "invalid_request_error", perr.Error())
			return
		}
		id := s.record(&s.requests, req)
		s.answer(r.Context(), w, req, id)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		s.record(&s.others, req)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]int{"input_tokens": estimateTokens(len(body))})
	default:
		s.record(&s.others, req)
		s.log("fakeanthropic: unknown request %s %s (%d bytes)", r.Method, r.URL.RequestURI(), len(body))
		writeError(w, http.StatusNotFound, "not_found_error", "fakeanthropic does not serve "+r.URL.Path)
	}
}

// record adds req to list, which wakes its waiters, and returns a fresh id
// number. The id is taken under s.mu with the add, so ids follow the order
// requests are recorded in across both lists.
func (s *Server) record(list *recorder.Recorder[Request], req Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	list.Add(req)
	return s.nextID
}

func (s *Server) log(format string, args ...any) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	// testing.T panics on a log after the test ended.
	if s.logf != nil && !closed {
		s.logf(format, args...)
	}
}

func (s *Server) answer(ctx context.Context, w http.ResponseWriter, req Request, id int) {
	reply := s.script(req)
	if reply.Hold != nil {
		select {
		case <-reply.Hold:
		case <-ctx.Done():
			return
		}
	}
	if reply.Status != 0 {
		writeError(w, reply.Status, errorType(reply.Status), reply.ErrorMessage)
		return
	}
	content := make([]Block, len(reply.Content))
	for i, b := range reply.Content {
		if b.Type == "tool_use" && b.ID == "" {
			b.ID = fmt.Sprintf("toolu_fake%04d_%d", id, i)
		}
		content[i] = b
	}
	model := req.Model
	if model == "" {
		model = "fake-model"
	}
	msg := wireMessage{
		ID: fmt.Sprintf("msg_fake%04d", id), Type: "message", Role: "assistant", Model: model,
		Content: content, StopReason: reply.stopReason(),
		Usage: usage{InputTokens: estimateTokens(len(req.Raw)), OutputTokens: outputTokens(content)},
	}
	w.Header().Set("request-id", fmt.Sprintf("req_fake%04d", id))
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		whole := startMessage(msg)
		whole["stop_reason"] = msg.StopReason
		json.NewEncoder(w).Encode(whole)
		return
	}
	writeStream(w, msg)
}

// wireMessage is the API's message object.
type wireMessage struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []Block `json:"-"`
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        usage   `json:"usage"`
}

type usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// writeStream sends msg as the API's server-sent events, one content block at
// a time, the way the real API does.
func writeStream(w http.ResponseWriter, msg wireMessage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}

	start := msg
	start.Content = nil
	start.Usage.OutputTokens = 1
	event("message_start", map[string]any{"type": "message_start", "message": startMessage(start)})
	for i, b := range msg.Content {
		switch b.Type {
		case "tool_use":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(b.Input)}})
		default:
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b.Text}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": msg.StopReason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": msg.Usage.OutputTokens}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// startMessage is the message object as message_start carries it: stop_reason
// is null until message_delta.
func startMessage(m wireMessage) map[string]any {
	content := make([]any, len(m.Content))
	for i, b := range m.Content {
		content[i] = wireBlock(b)
	}
	return map[string]any{"id": m.ID, "type": m.Type, "role": m.Role, "model": m.Model,
		"content": content, "stop_reason": nil, "stop_sequence": nil, "usage": m.Usage}
}

// wireBlock is a reply block as the API spells it: text always has its text,
// tool_use always has id, name and input.
func wireBlock(b Block) map[string]any {
	if b.Type == "tool_use" {
		return map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": b.Input}
	}
	return map[string]any{"type": "text", "text": b.Text}
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
}

// errorType is the API's error type for a status.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

// estimateTokens is a rough count (four bytes a token); the client only
// displays it.
func estimateTokens(n int) int { return n/4 + 1 }

func outputTokens(content []Block) int {
	n := 0
	for _, b := range content {
		n += len(b.Text) + len(b.Input)
	}
	return estimateTokens(n)
}
