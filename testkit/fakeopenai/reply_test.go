package fakeopenai

import (
	"encoding/json"
	"strings"
	"testing"
)

// conv builds a request from messages in shorthand: "u:text" is a user text,
// "a:tool" an assistant call of tool, "r" a tool result, "t:text" assistant
// text.
func conv(t *testing.T, withTools bool, msgs ...string) Request {
	t.Helper()
	var wire []map[string]any
	for i, m := range msgs {
		switch {
		case strings.HasPrefix(m, "u:"):
			wire = append(wire, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": m[2:]}}})
		case strings.HasPrefix(m, "a:"):
			wire = append(wire, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				map[string]any{"id": "c", "type": "function", "function": map[string]any{"name": m[2:], "arguments": "{}"}}}})
		case strings.HasPrefix(m, "t:"):
			wire = append(wire, map[string]any{"role": "assistant", "content": m[2:]})
		case m == "r":
			wire = append(wire, map[string]any{"role": "tool", "tool_call_id": "c", "content": "result"})
		default:
			t.Fatalf("bad shorthand %d: %q", i, m)
		}
	}
	body := map[string]any{"messages": append([]map[string]any{{"role": "system", "content": "You are Qwen Code. LIST"}}, wire...)}
	if withTools {
		body["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "list_agents"}}}
	}
	b, _ := json.Marshal(body)
	r, err := ParseRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func describe(r Reply) string {
	if len(r.ToolCalls) > 0 {
		return "call " + r.ToolCalls[0].Function.Name
	}
	return "text " + r.Text
}

func TestCallTools(t *testing.T) {
	script := Rules(Text("fallback"),
		CallTools("LIST", []FunctionCallSpec{{Name: "list_agents", Arguments: `{}`}, SendMessageCall("b", "m")}, "done"),
		CallTools("ASK", []FunctionCallSpec{{Name: "ask_user_question", Arguments: `{}`}}, "asked"),
	)
	tests := []struct {
		name  string
		tools bool
		msgs  []string
		want  string
	}{
		{"a request without the trigger gets the fallback", true, []string{"u:hello"}, "text fallback"},
		{"the trigger makes the first call", true, []string{"u:please LIST"}, "call list_agents"},
		{"its result makes the second call", true, []string{"u:LIST", "a:list_agents", "r"}, "call send_message"},
		{"after the last call the rule answers its text", true, []string{"u:LIST", "a:list_agents", "r", "a:send_message", "r"}, "text done"},
		{"a later unrelated turn goes to the fallback", true, []string{"u:LIST", "a:list_agents", "r", "a:send_message", "r", "t:done", "u:peer says hi"}, "text fallback"},
		{"a side query after the exchange goes to the fallback", true, []string{"u:LIST", "a:list_agents", "r", "a:send_message", "r", "t:done", "u:[SUGGESTION MODE]"}, "text fallback"},
		{"a newer trigger takes over from a finished one", true, []string{"u:LIST", "a:list_agents", "r", "a:send_message", "r", "u:ASK"}, "call ask_user_question"},
		{"a side query without tools is left alone", false, []string{"u:LIST"}, "text fallback"},
		{"a trigger in the system prompt does not count", true, []string{"u:hi"}, "text fallback"},
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
	s := CallToolOnce("GO", SendMessageCall("peer", "hi"), "finished")
	for _, tt := range []struct {
		msgs []string
		want string
	}{
		{[]string{"u:hi"}, "text ok"},
		{[]string{"u:GO"}, "call send_message"},
		{[]string{"u:GO", "a:send_message", "r"}, "text finished"},
	} {
		if got := describe(s(conv(t, true, tt.msgs...))); got != tt.want {
			t.Errorf("%v: got %s, want %s", tt.msgs, got, tt.want)
		}
	}
}

func TestSendMessageArguments(t *testing.T) {
	r := SendMessage("peer [abc123]", `quote " and newline`+"\n")
	var args map[string]string
	if err := json.Unmarshal([]byte(r.ToolCalls[0].Function.Arguments), &args); err != nil {
		t.Fatal(err)
	}
	if r.ToolCalls[0].Function.Name != "send_message" || args["to"] != "peer [abc123]" || args["message"] != `quote " and newline`+"\n" || len(args) != 2 {
		t.Errorf("call = %+v", r.ToolCalls[0])
	}
}

func TestReplyFinishReason(t *testing.T) {
	tests := []struct {
		name  string
		reply Reply
		want  string
	}{
		{"text stops", Text("hi"), "stop"},
		{"a call asks for the tool", Call("f", `{}`), "tool_calls"},
		{"text then a call asks for the tool", Text("looking").Then(Call("f", `{"a":1}`)), "tool_calls"},
		{"an explicit finish reason wins", Reply{Text: "x", FinishReason: "length"}, "length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.reply.finishReason(); got != tt.want {
				t.Errorf("finishReason() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestCallPanicsOnArgumentsThatAreNotAnObject(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `null`, `{`} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Call(%q) did not panic", in)
				}
			}()
			Call("f", in)
		}()
	}
}
