package fakeopenai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"time"

	"github.com/sessiongateway/gateway/testkit/recorder"
)

// maxBody caps a request body; a coding agent's first request (system prompt
// and every tool schema) is a few hundred KiB.
const maxBody = 32 << 20

// Model is the one model GET /v1/models lists; requests may name any other.
const Model = "fake-model"

// Server is a loopback fake of the OpenAI chat-completions API.
type Server struct {
	script Script
	logf   func(format string, args ...any)
	now    func() time.Time // for the "created" field only
	srv    *http.Server
	ln     net.Listener
	done   chan struct{} // closed when Serve returns

	mu     sync.Mutex
	closed bool
	nextID int // shared by both lists, so ids follow arrival order

	requests recorder.Recorder[Request] // every POST /v1/chat/completions, in arrival order
	others   recorder.Recorder[Request] // every other request (models, unknown paths)
}

// Start runs a fake on 127.0.0.1 for the length of a test; t.Cleanup closes
// it. Requests to paths the fake does not know are logged with t.Logf and
// answered 404.
func Start(t testing.TB, script Script) *Server {
	t.Helper()
	s, err := Listen(script, t.Logf)
	if err != nil {
		t.Fatalf("fakeopenai: %v", err)
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
	s := &Server{script: script, logf: logf, now: time.Now, ln: ln, done: make(chan struct{})}
	s.srv = &http.Server{Handler: s}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln) // returns ErrServerClosed on Close
	}()
	return s, nil
}

// URL is the server's root, http://127.0.0.1:PORT.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// BaseURL is what to put in OPENAI_BASE_URL: URL()/v1.
func (s *Server) BaseURL() string { return s.URL() + "/v1" }

// Close stops the server and waits for its goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	err := s.srv.Close()
	<-s.done
	return err
}

// Requests returns every chat-completions request received so far.
func (s *Server) Requests() []Request { return s.requests.All() }

// Others returns every other request received so far: model listings and
// anything the fake does not know, bodies decoded as far as they go.
func (s *Server) Others() []Request { return s.others.All() }

// Contains reports whether any chat-completions request so far contained sub
// (see Request.Contains).
func (s *Server) Contains(sub string) bool {
	return s.requests.Any(func(r Request) bool { return r.Contains(sub) })
}

// WaitRequest blocks until a chat-completions request matching pred has
// arrived (looking at those already received first) or ctx ends.
func (s *Server) WaitRequest(ctx context.Context, pred func(Request) bool) (Request, error) {
	r, seen, err := s.requests.Wait(ctx, pred)
	if err != nil {
		return Request{}, fmt.Errorf("fakeopenai: no matching request after %d: %w", seen, err)
	}
	return r, nil
}

// WaitContains waits for a request containing sub (see Request.Contains).
func (s *Server) WaitContains(ctx context.Context, sub string) (Request, error) {
	return s.WaitRequest(ctx, func(r Request) bool { return r.Contains(sub) })
}

// ServeHTTP routes the API paths. The query is ignored.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, err.Error())
		return
	}
	req, perr := ParseRequest(body)
	if perr != nil || r.Method != http.MethodPost {
		req = Request{Raw: body}
	}
	req.Path, req.Header = r.URL.Path, r.Header.Clone()

	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		if perr != nil {
			s.record(&s.others, req)
			writeError(w, http.StatusBadRequest, perr.Error())
			return
		}
		id := s.record(&s.requests, req)
		s.answer(r.Context(), w, req, id)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		s.record(&s.others, req)
		writeJSON(w, map[string]any{"object": "list", "data": []any{s.model(Model)}})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/models/"):
		s.record(&s.others, req)
		writeJSON(w, s.model(strings.TrimPrefix(r.URL.Path, "/v1/models/")))
	default:
		s.record(&s.others, req)
		s.log("fakeopenai: unknown request %s %s (%d bytes)", r.Method, r.URL.RequestURI(), len(body))
		writeError(w, http.StatusNotFound, "fakeopenai does not serve "+r.Method+" "+r.URL.Path)
	}
}

func (s *Server) model(id string) map[string]any {
	return map[string]any{"id": id, "object": "model", "created": s.now().Unix(), "owned_by": "fakeopenai"}
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
		writeError(w, reply.Status, reply.ErrorMessage)
		return
	}
	calls := make([]ToolCall, len(reply.ToolCalls))
	for i, c := range reply.ToolCalls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_fake%04d_%d", id, i)
		}
		if c.Type == "" {
			c.Type = "function"
		}
		calls[i] = c
	}
	model := req.Model
	if model == "" {
		model = Model
	}
	c := completion{
		id:      fmt.Sprintf("chatcmpl-fake%04d", id),
		created: s.now().Unix(),
		model:   model,
		text:    reply.Text,
		calls:   calls,
		finish:  reply.finishReason(),
		usage: usage{
			PromptTokens:     estimateTokens(len(req.Raw)),
			CompletionTokens: estimateTokens(len(reply.Text) + argsLen(calls)),
		},
	}
	c.usage.TotalTokens = c.usage.PromptTokens + c.usage.CompletionTokens
	w.Header().Set("x-request-id", fmt.Sprintf("req_fake%04d", id))
	if !req.Stream {
		writeJSON(w, c.whole())
		return
	}
	c.stream(w, req.IncludeUsage)
}

// completion is one answer, before it is spelled as a whole object or as
// chunks.
type completion struct {
	id      string
	created int64
	model   string
	text    string
	calls   []ToolCall
	finish  string
	usage   usage
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// whole is the non-streaming chat.completion object. content is null when
// the reply is only calls, as the real API sends it.
func (c completion) whole() map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil}
	if c.text != "" || len(c.calls) == 0 {
		msg["content"] = c.text
	}
	if len(c.calls) > 0 {
		msg["tool_calls"] = c.calls
	}
	return map[string]any{
		"id": c.id, "object": "chat.completion", "created": c.created, "model": c.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": c.finish}},
		"usage":   c.usage,
	}
}

// stream sends the answer as chat.completion.chunk events the way the real
// API does: the role first, then the text, then each call (its id and name,
// then its arguments), then an empty delta with the finish reason, a usage
// chunk when asked for, and [DONE].
func (c completion) stream(w http.ResponseWriter, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(data string) {
		fmt.Fprintf(w, "data: %s\n\n", data)
		if flusher != nil {
			flusher.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": c.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
		send(string(b))
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if c.text != "" {
		chunk(map[string]any{"content": c.text}, nil)
	}
	for i, call := range c.calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": call.ID, "type": call.Type,
			"function": map[string]any{"name": call.Function.Name, "arguments": ""},
		}}}, nil)
		chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "function": map[string]any{"arguments": call.Function.Arguments},
		}}}, nil)
	}
	chunk(map[string]any{}, c.finish)
	if includeUsage {
		b, _ := json.Marshal(map[string]any{
			"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": c.model,
			"choices": []any{}, "usage": c.usage,
		})
		send(string(b))
	}
	send("[DONE]")
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": errorType(status), "param": nil, "code": nil,
	}})
}

// errorType is the API's error type for a status.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	default:
		return "server_error"
	}
}

// estimateTokens is a rough count (four bytes a token); the client only
// displays it.
func estimateTokens(n int) int { return n/4 + 1 }

func argsLen(calls []ToolCall) int {
	n := 0
	for _, c := range calls {
		n += len(c.Function.Arguments)
	}
	return n
}
