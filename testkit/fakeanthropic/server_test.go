package fakeanthropic

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

type sse struct {
	name string
	data map[string]any
}

func readSSE(t *testing.T, r io.Reader) []sse {
	t.Helper()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
		case line == "":
			if cur.data["type"] != cur.name {
				t.Errorf("event %q carries type %v", cur.name, cur.data["type"])
			}
			out = append(out, cur)
			cur = sse{}
		}
	}
	return out
}

func TestStreamedReply(t *testing.T) {
	s := Start(t, Always(Text("looking").Then(ToolUse("SendMessage", `{"to":"b","message":"hi"}`))))
	resp := post(t, s.URL(), "/v1/messages?beta=true", `{"model":"claude-x","stream":true,"messages":[{"role":"user","content":"go"}]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %s", ct)
	}
	events := readSSE(t, resp.Body)
	var names []string
	for _, e := range events {
		names = append(names, e.name)
	}
	want := "message_start content_block_start content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("events:\n %s\nwant\n %s", got, want)
	}
	t.Run("message_start names the model and has no stop reason yet", func(t *testing.T) {
		m := events[0].data["message"].(map[string]any)
		if m["model"] != "claude-x" || m["stop_reason"] != nil || m["role"] != "assistant" {
			t.Errorf("message_start = %v", m)
		}
	})
	t.Run("the text block streams as a text_delta", func(t *testing.T) {
		d := events[2].data["delta"].(map[string]any)
		if d["type"] != "text_delta" || d["text"] != "looking" {
			t.Errorf("delta = %v", d)
		}
	})
	t.Run("the tool block starts with an id and empty input, then streams its JSON", func(t *testing.T) {
		b := events[4].data["content_block"].(map[string]any)
		if b["type"] != "tool_use" || b["name"] != "SendMessage" || !strings.HasPrefix(b["id"].(string), "toolu_") {
			t.Errorf("content_block = %v", b)
		}
		if in, ok := b["input"].(map[string]any); !ok || len(in) != 0 {
			t.Errorf("start input = %v, want {}", b["input"])
		}
		d := events[5].data["delta"].(map[string]any)
		if d["type"] != "input_json_delta" || d["partial_json"] != `{"to":"b","message":"hi"}` {
			t.Errorf("delta = %v", d)
		}
		if events[5].data["index"] != float64(1) {
			t.Errorf("index = %v, want 1", events[5].data["index"])
		}
	})
	t.Run("message_delta stops for the tool", func(t *testing.T) {
		d := events[7].data["delta"].(map[string]any)
		if d["stop_reason"] != "tool_use" {
			t.Errorf("message_delta = %v", events[7].data)
		}
	})
}

func TestWholeReplyWhenNotStreaming(t *testing.T) {
	s := Start(t, Always(Text("hello")))
	resp := post(t, s.URL(), "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	var msg struct {
		Type       string  `json:"type"`
		Content    []Block `json:"content"`
		StopReason string  `json:"stop_reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "message" || len(msg.Content) != 1 || msg.Content[0].Text != "hello" || msg.StopReason != "end_turn" {
		t.Errorf("message = %+v", msg)
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
		path   string
		body   string
		status int
	}{
		{"count_tokens answers a count", "/v1/messages/count_tokens", `{"messages":[]}`, http.StatusOK},
		{"an unknown path is a 404", "/v1/unknown", `{}`, http.StatusNotFound},
		{"a body that is not a request is a 400", "/v1/messages", `{"messages":"x"}`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, s.URL(), tt.path, tt.body)
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("Requests() has %d entries; none of these was a message", n)
	}
	if n := len(s.Others()); n != len(tests) {
		t.Errorf("Others() has %d entries, want %d", n, len(tests))
	}
	if len(logged) != 1 {
		t.Errorf("logged %d lines, want 1 for the unknown path", len(logged))
	}
}

func TestErrorReply(t *testing.T) {
	s := Start(t, Always(Error(529, "busy")))
	resp := post(t, s.URL(), "/v1/messages", `{"stream":true,"messages":[]}`)
	var body struct {
		Error struct{ Type, Message string } `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 529 || body.Error.Type != "overloaded_error" || body.Error.Message != "busy" {
		t.Errorf("got %d %+v", resp.StatusCode, body)
	}
}

func TestWaitRequest(t *testing.T) {
	s := Start(t, Always(Text("ok")))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	t.Run("a request already received is found at once", func(t *testing.T) {
		post(t, s.URL(), "/v1/messages", `{"messages":[{"role":"user","content":"first"}]}`)
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
		post(t, s.URL(), "/v1/messages", `{"messages":[{"role":"user","content":"second"}]}`)
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
	s := Start(t, Always(Reply{Content: Text("late").Content, Hold: release}))
	answered := make(chan string, 1)
	go func() {
		resp, err := http.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"wait"}]}`))
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
