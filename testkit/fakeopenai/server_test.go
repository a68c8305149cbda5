package fakeopenai

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func post(t *testing.T, url, path, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// chunk is one decoded chat.completion.chunk.
type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      *string `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

// readChunks reads data lines until [DONE], failing on anything else.
func readChunks(t *testing.T, r io.Reader) []chunk {
	t.Helper()
	var out []chunk
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not a data line", line)
		}
		if data == "[DONE]" {
			if sc.Scan() && strings.TrimSpace(sc.Text()) != "" {
				t.Errorf("%q after [DONE]", sc.Text())
			}
			return out
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("data %q: %v", data, err)
		}
		out = append(out, c)
	}
	t.Fatal("the stream ended without [DONE]")
	return nil
}

func TestStreamedReply(t *testing.T) {
	s := Start(t, Always(Text("looking").Then(SendMessage("b", "hi"))))
	resp := post(t, s.URL(), "/v1/chat/completions", `{"model":"fake-model","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"go"}]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %s", ct)
	}
	chunks := readChunks(t, resp.Body)
	if len(chunks) != 6 {
		t.Fatalf("got %d chunks, want role, text, call start, call arguments, finish, usage", len(chunks))
	}
	t.Run("every chunk is a chat.completion.chunk of one completion", func(t *testing.T) {
		for i, c := range chunks {
			if c.Object != "chat.completion.chunk" || c.ID != chunks[0].ID || c.Model != "fake-model" {
				t.Errorf("chunk %d = %+v", i, c)
			}
		}
	})
	t.Run("the role comes first, then the text", func(t *testing.T) {
		if d := chunks[0].Choices[0].Delta; d.Role == nil || *d.Role != "assistant" {
			t.Errorf("first delta = %+v", d)
		}
		if d := chunks[1].Choices[0].Delta; d.Content == nil || *d.Content != "looking" {
			t.Errorf("second delta = %+v", d)
		}
	})
	t.Run("the call starts with its id and name, then streams its arguments", func(t *testing.T) {
		start := chunks[2].Choices[0].Delta.ToolCalls
		if len(start) != 1 || start[0].ID == "" || start[0].Type != "function" || start[0].Function.Name != "send_message" || start[0].Function.Arguments != "" {
			t.Errorf("call start = %+v", start)
		}
		args := chunks[3].Choices[0].Delta.ToolCalls
		if len(args) != 1 || args[0].Index != 0 || args[0].ID != "" || args[0].Function.Arguments != `{"message":"hi","to":"b"}` {
			t.Errorf("call arguments = %+v", args)
		}
	})
	t.Run("the last choice finishes for the tool, and usage follows alone", func(t *testing.T) {
		if f := chunks[4].Choices[0].FinishReason; f == nil || *f != "tool_calls" {
			t.Errorf("finish chunk = %+v", chunks[4])
		}
		for _, c := range chunks[:4] {
			if c.Choices[0].FinishReason != nil {
				t.Errorf("finish_reason before the end: %+v", c)
			}
		}
		if u := chunks[5]; len(u.Choices) != 0 || u.Usage == nil || u.Usage.TotalTokens != u.Usage.PromptTokens+u.Usage.CompletionTokens {
			t.Errorf("usage chunk = %+v", u)
		}
	})
}

func TestStreamWithoutUsageEndsAtTheFinish(t *testing.T) {
	s := Start(t, Always(Text("hi")))
	resp := post(t, s.URL(), "/v1/chat/completions", `{"stream":true,"messages":[]}`)
	chunks := readChunks(t, resp.Body)
	last := chunks[len(chunks)-1]
	if last.Usage != nil || last.Choices[0].FinishReason == nil || *last.Choices[0].FinishReason != "stop" {
		t.Errorf("last chunk = %+v", last)
	}
}

func TestWholeReplyWhenNotStreaming(t *testing.T) {
	tests := []struct {
		name    string
		reply   Reply
		content any
		calls   int
		finish  string
	}{
		{"text is the message content", Text("hello"), "hello", 0, "stop"},
		{"a call alone has null content", SendMessage("b", "hi"), nil, 1, "tool_calls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, Always(tt.reply))
			resp := post(t, s.URL(), "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
			var c struct {
				Object  string `json:"object"`
				Choices []struct {
					Message struct {
						Role      string     `json:"role"`
						Content   any        `json:"content"`
						ToolCalls []ToolCall `json:"tool_calls"`
					} `json:"message"`
					FinishReason string `json:"finish_reason"`
				} `json:"choices"`
				Usage usage `json:"usage"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
				t.Fatal(err)
			}
			m := c.Choices[0].Message
			if c.Object != "chat.completion" || m.Role != "assistant" || m.Content != tt.content || len(m.ToolCalls) != tt.calls || c.Choices[0].FinishReason != tt.finish {
				t.Errorf("completion = %+v", c)
			}
			for _, call := range m.ToolCalls {
				if call.ID == "" || call.Type != "function" {
					t.Errorf("call without id or type: %+v", call)
				}
			}
		})
	}
}

func TestOtherEndpoints(t *testing.T) {
	var logged []string
	s, err := Listen(Always(Text("x")), func(format string, args ...any) { logged = append(logged, format) })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		status int
	}{
		{"the model list names the fake model", http.MethodGet, "/v1/models", "", http.StatusOK},
		{"any model can be looked up", http.MethodGet, "/v1/models/qwen3-coder", "", http.StatusOK},
		{"an unknown path is a 404", http.MethodPost, "/v1/responses", `{}`, http.StatusNotFound},
		{"a body that is not a request is a 400", http.MethodPost, "/v1/chat/completions", `{"messages":"x"}`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, s.URL()+tt.path, strings.NewReader(tt.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("Requests() has %d entries; none of these was a completion", n)
	}
	if n := len(s.Others()); n != len(tests) {
		t.Errorf("Others() has %d entries, want %d", n, len(tests))
	}
	if len(logged) != 1 {
		t.Errorf("logged %d lines, want 1 for the unknown path", len(logged))
	}
	if got := s.Others()[2].Path; got != "/v1/responses" {
		t.Errorf("the unknown request was recorded as %q", got)
	}
}

func TestModelList(t *testing.T) {
	s := Start(t, nil)
	resp, err := http.Get(s.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != Model || list.Data[0].Object != "model" {
		t.Errorf("models = %+v", list)
	}
	if s.BaseURL() != s.URL()+"/v1" {
		t.Errorf("BaseURL() = %s", s.BaseURL())
	}
}

func TestErrorReply(t *testing.T) {
	s := Start(t, Always(Error(429, "slow down")))
	resp := post(t, s.URL(), "/v1/chat/completions", `{"stream":true,"messages":[]}`)
	var body struct {
		Error struct{ Type, Message string } `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 429 || body.Error.Type != "rate_limit_error" || body.Error.Message != "slow down" {
		t.Errorf("got %d %+v", resp.StatusCode, body)
	}
}

func TestWaitRequest(t *testing.T) {
	s := Start(t, Always(Text("ok")))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	t.Run("a request already received is found at once", func(t *testing.T) {
		post(t, s.URL(), "/v1/chat/completions", `{"messages":[{"role":"user","content":"first"}]}`)
		if _, err := s.WaitContains(ctx, "first"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a waiter wakes for a later request", func(t *testing.T) {
		got := make(chan error, 1)
		go func() {
			_, err := s.WaitContains(ctx, "second")
			got <- err
		}()
		post(t, s.URL(), "/v1/chat/completions", `{"messages":[{"role":"user","content":"second"}]}`)
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		if !s.Contains("second") || s.Contains("third") {
			t.Error("Server.Contains disagrees with what was sent")
		}
	})
	t.Run("a waiter gives up when its context ends", func(t *testing.T) {
		short, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.WaitContains(short, "never"); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}

func TestHoldDelaysTheAnswer(t *testing.T) {
	release := make(chan struct{})
	s := Start(t, Always(Reply{Text: "late", Hold: release}))
	answered := make(chan string, 1)
	go func() {
		resp, err := http.Post(s.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"wait"}]}`))
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- string(b)
	}()
	// The script has run once the request is recorded; the answer cannot
	// have been written, because release is still open.
	if _, err := s.WaitContains(t.Context(), "wait"); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answered:
		t.Fatalf("answered before release: %s", a)
	default:
	}
	close(release)
	if a := <-answered; !strings.Contains(a, `"late"`) {
		t.Errorf("answer = %s", a)
	}
}
