package fakeanthropic

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
			"string content becomes one text block",
			`{"model":"m","messages":[{"role":"user","content":"hello there"}]}`,
			[]string{"hello there"}, nil, "",
		},
		{
			"block content is read block by block",
			`{"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"DO-IT"}]}]}`,
			[]string{"DO-IT", "<system-reminder>"}, nil, "",
		},
		{
			"tool inputs are searched unescaped",
			`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"SendMessage","input":{"to":"b","message":"say \"hi\"\n<now>"}}]}]}`,
			[]string{`say "hi"` + "\n<now>", "b"}, []string{`\"hi\"`}, "",
		},
		{
			"tool results are searched, as string or as blocks",
			`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"plain result"},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"block result"}]}]}]}`,
			[]string{"plain result", "block result"}, nil, "",
		},
		{
			"the system prompt is not part of the messages",
			`{"system":[{"type":"text","text":"You are Claude"}],"messages":[{"role":"system","content":[{"type":"text","text":"# Environment"}]},{"role":"user","content":"hi"}]}`,
			[]string{"# Environment", "hi"}, []string{"You are Claude"}, "You are Claude\n",
		},
		{
			"a string system prompt is one block",
			`{"system":"be brief","messages":[]}`,
			nil, []string{"be brief"}, "be brief\n",
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
	for _, body := range []string{``, `[]`, `{"messages":"x"}`, `{"messages":[{"content":7}]}`} {
		if _, err := ParseRequest([]byte(body)); !errors.Is(err, ErrBadRequest) {
			t.Errorf("ParseRequest(%q) error = %v, want ErrBadRequest", body, err)
		}
	}
}

func TestRequestHelpers(t *testing.T) {
	r, err := ParseRequest([]byte(`{"tools":[{"name":"ListAgents"}],"messages":[
		{"role":"user","content":"first"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ListAgents","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"peer-a [abc123]"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !r.HasTool("ListAgents") || r.HasTool("SendMessage") {
		t.Error("HasTool does not follow the tools list")
	}
	if got := r.LastUser().Text(); got != "peer-a [abc123]\n" {
		t.Errorf("LastUser().Text() = %q", got)
	}
	if b, ok := r.ToolResult("t1"); !ok || !strings.Contains(b.Content[0].Text, "abc123") {
		t.Errorf("ToolResult(t1) = %+v, %v", b, ok)
	}
	if _, ok := r.ToolResult("t2"); ok {
		t.Error("ToolResult found a result that is not there")
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"system":[{"type":"text","text":"s"}],"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"a":[1,"b",{"c":null}]}}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}]}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseRequest(body)
		if err != nil {
			return
		}
		// Whatever parsed must be searchable without panicking.
		r.Text()
		r.SystemText()
		r.LastUser().Text()
		r.ToolResults()
	})
}
