package fakeopenai

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		contains []string // Request.Contains must be true
		lacks    []string // and false
		system   string
	}{
		{
			"string content becomes one text part",
			`{"model":"m","messages":[{"role":"user","content":"hello there"}]}`,
			[]string{"hello there"}, nil, "",
		},
		{
			"part content is read part by part, as Qwen Code sends it",
			`{"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"DO-IT"}]}]}`,
			[]string{"DO-IT", "<system-reminder>"}, nil, "",
		},
		{
			"call arguments are searched unescaped",
			`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"send_message","arguments":"{\"to\":\"b\",\"message\":\"say \\\"hi\\\"\\n<now>\"}"}}]}]}`,
			[]string{`say "hi"` + "\n<now>", "b"}, []string{`\"hi\"`}, "",
		},
		{
			"arguments that are not JSON are searched as they are",
			`{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{half"}}]}]}`,
			[]string{"{half"}, nil, "",
		},
		{
			"tool results are searched",
			`{"messages":[{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"Sent to peer-a"}]}]}`,
			[]string{"Sent to peer-a"}, nil, "",
		},
		{
			"the system prompt is not part of the conversation",
			`{"messages":[{"role":"system","content":"You are Qwen Code"},{"role":"developer","content":"be brief"},{"role":"user","content":"hi"}]}`,
			[]string{"hi"}, []string{"You are Qwen Code", "be brief"}, "You are Qwen Code\nbe brief\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.contains {
				if !r.Contains(s) {
					t.Errorf("Contains(%q) = false; text:\n%s", s, r.Text())
				}
			}
			for _, s := range tt.lacks {
				if r.Contains(s) {
					t.Errorf("Contains(%q) = true; text:\n%s", s, r.Text())
				}
			}
			if got := r.SystemText(); got != tt.system {
				t.Errorf("SystemText() = %q, want %q", got, tt.system)
			}
		})
	}
}

func TestParseRequestRejectsWhatIsNotARequest(t *testing.T) {
	for _, body := range []string{``, `[]`, `{"messages":"x"}`, `{"messages":[{"content":7}]}`, `{"messages":[{"tool_calls":"x"}]}`} {
		if _, err := ParseRequest([]byte(body)); !errors.Is(err, ErrBadRequest) {
			t.Errorf("ParseRequest(%q) error = %v, want ErrBadRequest", body, err)
		}
	}
}

func TestParseRequestReadsStreamOptions(t *testing.T) {
	r, err := ParseRequest([]byte(`{"model":"fake-model","stream":true,"stream_options":{"include_usage":true},"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Stream || !r.IncludeUsage || r.Model != "fake-model" {
		t.Errorf("request = %+v", r)
	}
}

func TestRequestHelpers(t *testing.T) {
	r, err := ParseRequest([]byte(`{"tools":[{"type":"function","function":{"name":"list_agents"}}],"messages":[
		{"role":"user","content":"first"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"list_agents","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"peer-a [abc123]"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !r.HasTool("list_agents") || r.HasTool("send_message") {
		t.Error("HasTool does not follow the tools list")
	}
	if got := r.LastUser().Text(); got != "first\n" {
		t.Errorf("LastUser().Text() = %q", got)
	}
	if m, ok := r.ToolResult("c1"); !ok || !strings.Contains(m.Text(), "abc123") {
		t.Errorf("ToolResult(c1) = %+v, %v", m, ok)
	}
	if _, ok := r.ToolResult("c2"); ok {
		t.Error("ToolResult found a result that is not there")
	}
	if calls := r.ToolCalls(); len(calls) != 1 || calls[0].Function.Name != "list_agents" {
		t.Errorf("ToolCalls() = %+v", calls)
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"n","arguments":"{\"a\":[1,\"b\",{\"c\":null}]}"}}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"r"}]},{"role":"system","content":"s"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseRequest(body)
		if err != nil {
			return
		}
		// Whatever parsed must be searchable without panicking.
		r.Text()
		r.SystemText()
		r.LastUser().Text()
		r.ToolCalls()
	})
}
