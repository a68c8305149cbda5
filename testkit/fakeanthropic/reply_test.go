package fakeanthropic

import (
	"encoding/json"
	"strings"
	"testing"
)

// conv builds a request from messages in shorthand: "u:text" is a user text,
// "a:Tool" an assistant call of Tool, "r" a user tool result, "s:text" a user
// message holding only a system reminder plus a tool result.
func conv(t *testing.T, withTools bool, msgs ...string) Request {
	t.Helper()
	var wire []map[string]any
	for i, m := range msgs {
		switch {
		case strings.HasPrefix(m, "u:"):
			wire = append(wire, map[string]any{"role": "user", "content": m[2:]})
		case strings.HasPrefix(m, "a:"):
			wire = append(wire, map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "tool_use", "id": "t", "name": m[2:], "input": map[string]any{}}}})
		case m == "r":
			wire = append(wire, map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "t", "content": "result"}}})
		case m == "s":
			wire = append(wire, map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "t", "content": "result"},
				map[string]any{"type": "text", "text": "<system-reminder>note</system-reminder>"}}})
		default:
			t.Fatalf("bad shorthand %d: %q", i, m)
		}
	}
	body := map[string]any{"messages": wire}
	if withTools {
		body["tools"] = []any{map[string]any{"name": "ListAgents"}}
	}
	b, _ := json.Marshal(body)
	r, err := ParseRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func describe(r Reply) string {
	if len(r.Content) == 0 {
		return "(empty)"
	}
	b := r.Content[0]
	if b.Type == "tool_use" {
		return "call " + b.Name
	}
	return "text " + b.Text
}

func TestCallTools(t *testing.T) {
	script := Rules(Text("fallback"),
		CallTools("LIST", []Call{{Tool: "ListAgents", Input: `{}`}, {Tool: "SendMessage", Input: `{"to":"b","message":"m"}`}}, "done"),
		CallTools("ASK", []Call{{Tool: "AskUser", Input: `{}`}}, "asked"),
	)
	tests := []struct {
		name  string
		tools bool
		msgs  []string
		want  string
	}{
		{"a request without the trigger gets the fallback", true, []string{"u:hello"}, "text fallback"},
		{"the trigger makes the first call", true, []string{"u:please LIST"}, "call ListAgents"},
		{"its result makes the second call", true, []string{"u:LIST", "a:ListAgents", "r"}, "call SendMessage"},
		{"after the last call the rule answers its text", true, []string{"u:LIST", "a:ListAgents", "r", "a:SendMessage", "r"}, "text done"},
		{"a system reminder beside the result still counts as the result", true, []string{"u:LIST", "a:ListAgents", "r", "a:SendMessage", "s"}, "text done"},
		{"a later unrelated turn goes to the fallback", true, []string{"u:LIST", "a:ListAgents", "r", "a:SendMessage", "r", "u:peer says hi"}, "text fallback"},
		{"a newer trigger takes over from a finished one", true, []string{"u:LIST", "a:ListAgents", "r", "a:SendMessage", "r", "u:ASK"}, "call AskUser"},
		{"a side query without tools is left alone", false, []string{"u:LIST"}, "text fallback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(script(conv(t, tt.tools, tt.msgs...))); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestCallToolOnce(t *testing.T) {
	s := CallToolOnce("GO", "ListAgents", `{}`, "finished")
	for _, tt := range []struct {
		msgs []string
		want string
	}{
		{[]string{"u:hi"}, "text ok"},
		{[]string{"u:GO"}, "call ListAgents"},
		{[]string{"u:GO", "a:ListAgents", "r"}, "text finished"},
	} {
		if got := describe(s(conv(t, true, tt.msgs...))); got != tt.want {
			t.Errorf("%v: got %s, want %s", tt.msgs, got, tt.want)
		}
	}
}

func TestReplyStopReason(t *testing.T) {
	tests := []struct {
		name  string
		reply Reply
		want  string
	}{
		{"text ends the turn", Text("hi"), "end_turn"},
		{"a tool call asks for the tool", ToolUse("T", `{}`), "tool_use"},
		{"text then a tool call asks for the tool", Text("looking").Then(ToolUse("T", `{"a":1}`)), "tool_use"},
		{"an explicit stop reason wins", Reply{Content: Text("x").Content, StopReason: "max_tokens"}, "max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.reply.stopReason(); got != tt.want {
				t.Errorf("stopReason() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestToolUsePanicsOnInputThatIsNotAnObject(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `null`, `{`} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("ToolUse(%q) did not panic", in)
				}
			}()
			ToolUse("T", in)
		}()
	}
}
