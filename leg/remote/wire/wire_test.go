package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Lines of captured traffic, with their "..." placeholders filled in.
const (
	seedKeepAlive = `{"type": "keep_alive"}`
	seedAssistant = `{"type": "assistant", "session_id": "session_01", "uuid": "evt_1",
	 "created_at": "2026-03-11T10:00:00Z", "parent_tool_use_id": null,
	 "message": {"id": "msg_1", "model": "claude-opus-4-6", "role": "assistant",
	  "content": [{"type": "text", "text": "Reading."},
	   {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/a"}, "caller": {"type": "direct"}}],
	  "stop_reason": "tool_use", "stop_sequence": null, "type": "message",
	  "usage": {"input_tokens": 12345, "output_tokens": 678, "cache_creation_input_tokens": 0,
	   "cache_read_input_tokens": 9000, "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 1234},
	   "inference_geo": "us", "service_tier": "standard", "speed": "fast"}}}`
	seedResult = `{"type": "result", "session_id": "session_01", "created_at": "2026-03-12T00:00:00Z",
	 "subtype": "success", "result": "", "duration_ms": 0, "duration_api_ms": 0, "num_turns": 0,
	 "total_cost_usd": 0, "is_error": false, "stop_reason": null, "modelUsage": {},
	 "permission_denials": [], "usage": {"input_tokens": 3}}`
	seedUser = `{"type": "user", "uuid": "random-uuid", "session_id": "session_01", "parent_tool_use_id": null,
	 "message": {"role": "user", "content": "Hello"},
	 "file_attachments": [{"file_name": "a.txt", "file_type": "text/plain", "file_content": "hi"}]}`
	seedInterrupt = `{"type": "control_request", "request_id": "interrupt-1710-abc123", "request": {"subtype": "interrupt"}}`
	seedPermMode  = `{"type":"control_request","request_id":"set-perm-mode-1","request":{"subtype":"set_permission_mode","mode":"acceptEdits"}}`
	seedInit      = `{"request_id":"ocg3n6ewj7k","type":"control_request","request":{"subtype":"initialize"}}`
	seedInitSDK   = `{"type": "control_request", "request_id": "r1", "request": {"subtype": "initialize",
	 "hooks": {"eventName": [{"matcher": null, "hookCallbackIds": ["hook_0"]}]}, "sdkMcpServers": ["server1"]}}`
	seedAskUser = `{"type": "control_request", "request_id": "d80cd902", "session_id": "session_01",
	 "request": {"subtype": "can_use_tool", "tool_name": "AskUserQuestion", "tool_use_id": "toolu_01",
	  "description": "Asks the user multiple choice questions...",
	  "input": {"questions": [
	   {"question": "Which approach?", "header": "Approach", "multiSelect": false,
	    "options": [{"label": "Option A (Recommended)", "description": "d", "preview": "code preview..."}, {"label": "Option B", "description": "d"}]},
	   {"question": "Which features?", "header": "Features", "multiSelect": true,
	    "options": [{"label": "Logging", "description": "d"}, {"label": "Metrics", "description": "d"}]}]}}}`
	seedMCPMessage = `{"type": "control_request", "request_id": "m1", "request": {"subtype": "mcp_message",
	 "server_name": "my-server", "message": {"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1}}}`
	seedAllow = `{"type": "control_response", "response": {"subtype": "success", "request_id": "toolu_01",
	 "response": {"toolUseID": "toolu_01", "behavior": "allow", "updatedInput": {"command": "ls"},
	  "updatedPermissions": [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "bun run tsc"}], "behavior": "allow", "destination": "localSettings"}]}}}`
	seedAnswers = `{"type": "control_response", "response": {"subtype": "success", "request_id": "d80cd902",
	 "response": {"behavior": "allow", "updatedInput": {"questions": [], "answers": {"Which approach?": "Option A", "Which features?": ["Logging", "Metrics"]}}}}}`
	seedError   = `{"type": "control_response", "response": {"subtype": "error", "request_id": "abc123", "error": "Error message"}}`
	seedInitAns = `{"type": "control_response", "session_id": "session_01", "created_at": "2026-03-11T10:00:00Z",
	 "response": {"subtype": "success", "request_id": "ocg3n6ewj7k", "response": {"account": {},
	  "available_output_styles": ["normal"], "commands": [], "models": [], "output_style": "normal", "pid": 55612}}}`
	seedMCPAnswer = `{"type": "control_response", "response": {"subtype": "success", "request_id": "m1",
	 "response": {"mcp_response": {"jsonrpc": "2.0", "result": {}, "id": 1}}}}`
	seedCancel = `{"type": "control_cancel_request", "request_id": "abc123"}`
)

func mustDecode(t *testing.T, line string) Message {
	t.Helper()
	m, err := Decode([]byte(line))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return m
}

func TestDecodeMessageTypes(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		check func(t *testing.T, m Message)
	}{
		{"a keep_alive is a heartbeat with nothing else", seedKeepAlive, func(t *testing.T, m Message) {
			if m.Kind != KindKeepAlive || m.Assistant != nil || m.ControlRequest != nil {
				t.Errorf("got %+v", m)
			}
		}},
		{"an assistant message keeps its id, model, blocks, stop reason and usage", seedAssistant, func(t *testing.T, m Message) {
			a := m.Assistant
			if m.Kind != KindAssistant || m.UUID != "evt_1" || m.SessionID != "session_01" || m.ParentToolUseID != "" {
				t.Fatalf("envelope %+v", m)
			}
			if a.ID != "msg_1" || a.Model != "claude-opus-4-6" || a.StopReason != "tool_use" || a.StopSequence != "" {
				t.Errorf("assistant %+v", a)
			}
			want := Usage{InputTokens: 12345, OutputTokens: 678, CacheReadInputTokens: 9000,
				CacheCreation: &Cache{Ephemeral5mInputTokens: 1234}, InferenceGeo: "us", ServiceTier: "standard", Speed: "fast"}
			if !reflect.DeepEqual(*a.Usage, want) {
				t.Errorf("usage %+v", *a.Usage)
			}
			if len(a.Content.Blocks) != 2 || a.Content.Text() != "Reading." {
				t.Fatalf("content %+v", a.Content)
			}
			tu := a.Content.Blocks[1]
			if tu.Kind != BlockToolUse || tu.ID != "toolu_1" || tu.Name != "Read" || tu.CallerType != "direct" || string(tu.Input) != `{"file_path": "/a"}` {
				t.Errorf("tool_use %+v", tu)
			}
		}},
		{"a user message with string content becomes one text block and keeps its attachments", seedUser, func(t *testing.T, m Message) {
			u := m.User
			if m.Kind != KindUser || u.Role != "user" || !u.Content.String || u.Content.Text() != "Hello" {
				t.Fatalf("user %+v", u)
			}
			if len(u.FileAttachments) != 1 || u.FileAttachments[0].FileName != "a.txt" {
				t.Errorf("attachments %+v", u.FileAttachments)
			}
		}},
		{"a user tool result keeps nested blocks and its tool_use_result metadata",
			`{"type":"user","parent_tool_use_id":"toolu_9","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","is_error":true,
			  "content":[{"type":"text","text":"no"},{"type":"tool_reference","tool_name":"WebFetch"}]}]},"tool_use_result":{"answers":{"Q":"A"}}}`,
			func(t *testing.T, m Message) {
				if m.ParentToolUseID != "toolu_9" || string(m.User.ToolUseResult) != `{"answers":{"Q":"A"}}` {
					t.Errorf("envelope %+v", m)
				}
				b := m.User.Content.Blocks[0]
				if b.Kind != BlockToolResult || b.ToolUseID != "toolu_01" || !b.IsError || b.Content.Text() != "no" {
					t.Fatalf("tool_result %+v", b)
				}
				if r := b.Content.Blocks[1]; r.Kind != BlockToolReference || r.ToolName != "WebFetch" {
					t.Errorf("tool_reference %+v", r)
				}
			}},
		{"a tool result with string content is text",
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}`,
			func(t *testing.T, m Message) {
				if c := m.User.Content.Blocks[0].Content; c == nil || !c.String || c.Text() != "ok" {
					t.Errorf("content %+v", c)
				}
			}},
		{"a thinking block keeps its signature and possibly empty text",
			`{"type":"assistant","message":{"id":"msg_2","content":[{"type":"thinking","thinking":"","signature":"EqQB"}],"stop_reason":null}}`,
			func(t *testing.T, m Message) {
				b := m.Assistant.Content.Blocks[0]
				if b.Kind != BlockThinking || b.Signature != "EqQB" || b.Thinking != "" || m.Assistant.StopReason != "" {
					t.Errorf("thinking %+v", b)
				}
			}},
		{"a result carries the turn summary", seedResult, func(t *testing.T, m Message) {
			r := m.Result
			if m.Kind != KindResult || r.Subtype != "success" || r.IsError || string(r.ModelUsage) != "{}" ||
				string(r.PermissionDenials) != "[]" || r.Usage.InputTokens != 3 {
				t.Errorf("result %+v", r)
			}
		}},
		{"a system message keeps its subtype", `{"type":"system","subtype":"init","session_id":"s"}`, func(t *testing.T, m Message) {
			if m.Kind != KindSystem || m.System.Subtype != "init" {
				t.Errorf("system %+v", m)
			}
		}},
		{"an interrupt request is a control request with no fields", seedInterrupt, func(t *testing.T, m Message) {
			if r := m.ControlRequest; r.Subtype != SubtypeInterrupt || r.RequestID != "interrupt-1710-abc123" {
				t.Errorf("request %+v", r)
			}
		}},
		{"a set_permission_mode request carries the mode", seedPermMode, func(t *testing.T, m Message) {
			if r := m.ControlRequest; r.Subtype != SubtypeSetPermissionMode || r.Mode != "acceptEdits" {
				t.Errorf("request %+v", r)
			}
		}},
		{"the web client's minimal initialize decodes", seedInit, func(t *testing.T, m Message) {
			if r := m.ControlRequest; r.Subtype != SubtypeInitialize || r.RequestID != "ocg3n6ewj7k" {
				t.Errorf("request %+v", r)
			}
		}},
		{"an SDK initialize keeps hooks and MCP servers", seedInitSDK, func(t *testing.T, m Message) {
			r := m.ControlRequest
			if len(r.SDKMCPServers) != 1 || r.SDKMCPServers[0] != "server1" || !strings.Contains(string(r.Hooks), "hook_0") {
				t.Errorf("request %+v", r)
			}
		}},
		{"set_model and set_max_thinking_tokens carry their values",
			`{"type":"control_request","request_id":"x","request":{"subtype":"set_max_thinking_tokens","max_thinking_tokens":1024}}`,
			func(t *testing.T, m Message) {
				if r := m.ControlRequest; r.Subtype != SubtypeSetMaxThinkingTokens || r.MaxThinkingTokens == nil || *r.MaxThinkingTokens != 1024 {
					t.Errorf("request %+v", r)
				}
				m2 := mustDecode(t, `{"type":"control_request","request_id":"y","request":{"subtype":"set_model","model":"claude-sonnet-4-6"}}`)
				if r := m2.ControlRequest; r.Subtype != SubtypeSetModel || r.Model != "claude-sonnet-4-6" {
					t.Errorf("request %+v", r)
				}
			}},
		{"an AskUserQuestion prompt is a can_use_tool request with typed questions", seedAskUser, func(t *testing.T, m Message) {
			r := m.ControlRequest
			if r.Subtype != SubtypeCanUseTool || r.ToolName != "AskUserQuestion" || r.ToolUseID != "toolu_01" || r.RequestID != "d80cd902" || m.SessionID != "session_01" {
				t.Fatalf("request %+v", r)
			}
			qs, err := r.Questions()
			if err != nil || len(qs) != 2 || qs[0].MultiSelect || !qs[1].MultiSelect || qs[0].Options[0].Preview != "code preview..." || qs[1].Options[1].Label != "Metrics" {
				t.Errorf("questions %+v, %v", qs, err)
			}
		}},
		{"a can_use_tool prompt keeps permission suggestions and the blocked path",
			`{"type":"control_request","request_id":"p1","request":{"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"toolu_2",
			  "input":{"command":"rm -rf x"},"permission_suggestions":[{"type":"addRules"}],"blocked_path":"/etc"}}`,
			func(t *testing.T, m Message) {
				r := m.ControlRequest
				if r.ToolName != "Bash" || r.BlockedPath != "/etc" || string(r.PermissionSuggestions) != `[{"type":"addRules"}]` || string(r.Input) != `{"command":"rm -rf x"}` {
					t.Errorf("request %+v", r)
				}
				if qs, err := r.Questions(); qs != nil || err != nil {
					t.Errorf("a Bash prompt has no questions, got %v %v", qs, err)
				}
			}},
		{"an mcp_message request carries its server and JSON-RPC message", seedMCPMessage, func(t *testing.T, m Message) {
			if r := m.ControlRequest; r.Subtype != SubtypeMCPMessage || r.ServerName != "my-server" || !strings.Contains(string(r.MCPMessage), "tools/list") {
				t.Errorf("request %+v", r)
			}
		}},
		{"a hook_callback request decodes with its raw request kept",
			`{"type":"control_request","request_id":"h","request":{"subtype":"hook_callback","callback_id":"hook_0","input":{}}}`,
			func(t *testing.T, m Message) {
				if r := m.ControlRequest; r.Subtype != SubtypeHookCallback || r.CallbackID != "hook_0" || len(r.Raw) == 0 {
					t.Errorf("request %+v", r)
				}
			}},
		{"a permission allow decodes into a decision with rule updates", seedAllow, func(t *testing.T, m Message) {
			r := m.ControlResponse
			want := &Decision{Behavior: "allow", ToolUseID: "toolu_01", UpdatedInput: json.RawMessage(`{"command": "ls"}`),
				UpdatedPermissions: []PermissionUpdate{{Type: "addRules", Rules: []Rule{{ToolName: "Bash", RuleContent: "bun run tsc"}}, Behavior: "allow", Destination: "localSettings"}}}
			if r.Subtype != "success" || r.RequestID != "toolu_01" || !reflect.DeepEqual(r.Decision, want) || r.Initialize != nil {
				t.Errorf("response %+v decision %+v", r, r.Decision)
			}
		}},
		{"AskUserQuestion answers keep single answers as strings and multi-select as lists", seedAnswers, func(t *testing.T, m Message) {
			var in struct{ Answers map[string]any }
			if err := json.Unmarshal(m.ControlResponse.Decision.UpdatedInput, &in); err != nil {
				t.Fatal(err)
			}
			if in.Answers["Which approach?"] != "Option A" || len(in.Answers["Which features?"].([]any)) != 2 {
				t.Errorf("answers %v", in.Answers)
			}
		}},
		{"an error response carries its message", seedError, func(t *testing.T, m Message) {
			if r := m.ControlResponse; r.Subtype != "error" || r.Error != "Error message" || r.RequestID != "abc123" || r.Decision != nil {
				t.Errorf("response %+v", r)
			}
		}},
		{"the initialize answer decodes its account, styles and pid", seedInitAns, func(t *testing.T, m Message) {
			i := m.ControlResponse.Initialize
			if i == nil || i.PID != 55612 || i.OutputStyle != "normal" || len(i.AvailableOutputStyles) != 1 || m.ControlResponse.Pending != nil {
				t.Errorf("initialize %+v", i)
			}
		}},
		{"pending permission requests in the initialize answer become control requests",
			`{"type":"control_response","response":{"subtype":"success","request_id":"i","response":{"pid":1,"pending_permission_requests":[
			  {"type":"control_request","request_id":"p1","request":{"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"toolu_a","input":{}}},
			  {"subtype":"can_use_tool","request_id":"p2","tool_name":"ExitPlanMode","tool_use_id":"toolu_b","input":{}}]}}}`,
			func(t *testing.T, m Message) {
				p := m.ControlResponse.Pending
				if len(p) != 2 || p[0].RequestID != "p1" || p[0].ToolName != "Bash" || p[1].RequestID != "p2" || p[1].ToolName != "ExitPlanMode" || p[1].Subtype != SubtypeCanUseTool {
					t.Errorf("pending %+v", p)
				}
			}},
		{"an MCP answer keeps the JSON-RPC response", seedMCPAnswer, func(t *testing.T, m Message) {
			if r := m.ControlResponse; !strings.Contains(string(r.MCPResponse), `"jsonrpc"`) {
				t.Errorf("response %+v", r)
			}
		}},
		{"a cancel withdraws a request by id", seedCancel, func(t *testing.T, m Message) {
			if m.Kind != KindControlCancelRequest || m.Cancel.RequestID != "abc123" {
				t.Errorf("cancel %+v", m)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustDecode(t, tt.line)
			if string(m.Raw) != strings.TrimSpace(tt.line) {
				t.Errorf("Raw is not the line")
			}
			tt.check(t, m)
		})
	}
}

func TestUnknownKeptRaw(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		check func(t *testing.T, m Message)
	}{
		{"an unknown message type is kept whole", `{"type":"rate_limit_event","info":{"x":1}}`, func(t *testing.T, m Message) {
			if m.Kind != KindUnknown || m.Type != "rate_limit_event" || string(m.Raw) != `{"type":"rate_limit_event","info":{"x":1}}` {
				t.Errorf("got %+v", m)
			}
		}},
		{"an unknown block type is kept raw among known blocks",
			`{"type":"assistant","message":{"id":"m","content":[{"type":"image","source":{"data":"AAA"}},{"type":"text","text":"t"}]}}`,
			func(t *testing.T, m Message) {
				b := m.Assistant.Content.Blocks
				if len(b) != 2 || b[0].Kind != BlockUnknown || b[0].Type != "image" || string(b[0].Raw) != `{"type":"image","source":{"data":"AAA"}}` || b[1].Text != "t" {
					t.Errorf("blocks %+v", b)
				}
			}},
		{"an unknown control subtype is kept raw", `{"type":"control_request","request_id":"r","request":{"subtype":"rewind","to":3}}`,
			func(t *testing.T, m Message) {
				r := m.ControlRequest
				if r.Subtype != SubtypeUnknown || r.SubtypeRaw != "rewind" || string(r.Raw) != `{"subtype":"rewind","to":3}` {
					t.Errorf("request %+v", r)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, mustDecode(t, tt.line)) })
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name string
		line string
		want error
	}{
		{"an empty line is not JSON", ``, ErrSyntax},
		{"truncated JSON is a syntax error", `{"type":"assistant"`, ErrSyntax},
		{"trailing garbage is a syntax error", `{"type":"keep_alive"} x`, ErrSyntax},
		{"an array is not a message", `[1,2]`, ErrNotObject},
		{"a string is not a message", `"keep_alive"`, ErrNotObject},
		{"an object without a type cannot be routed", `{"uuid":"u"}`, ErrNoType},
		{"content of the wrong shape is a field error", `{"type":"assistant","message":{"content":7}}`, ErrField},
		{"a block that is not an object is a field error", `{"type":"user","message":{"content":["x"]}}`, ErrField},
		{"a control request without a request is a field error", `{"type":"control_request","request_id":"r"}`, ErrField},
		{"a numeric uuid is a field error", `{"type":"user","uuid":5}`, ErrField},
		{"tool results nested past the cap are refused", `{"type":"user","message":{"content":` + nest(maxContentDepth+2) + `}}`, ErrField},
		{"a line over the cap is refused unparsed", `{"type":"keep_alive","pad":"` + strings.Repeat("x", MaxLine) + `"}`, ErrLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Decode([]byte(tt.line)); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// nest builds tool_result content nested n deep.
func nest(n int) string {
	s := `"x"`
	for range n {
		s = `[{"type":"tool_result","tool_use_id":"t","content":` + s + `}]`
	}
	return s
}

func TestMergeAssistant(t *testing.T) {
	dec := func(content string, stop string) Assistant {
		return *mustDecode(t, `{"type":"assistant","message":{"id":"msg_1","content":`+content+`,"stop_reason":`+stop+`}}`).Assistant
	}
	texts := func(a Assistant) []string {
		var out []string
		for _, b := range a.Content.Blocks {
			out = append(out, b.Type+":"+b.Text+b.Thinking+b.ID)
		}
		return out
	}
	tests := []struct {
		name   string
		copies []Assistant
		want   []string
		stop   string
	}{
		{"the protocol's thinking, text, tool_use stream ends with all three blocks in order",
			[]Assistant{dec(`[{"type":"thinking","thinking":"hm"}]`, "null"), dec(`[{"type":"text","text":"I will"}]`, "null"),
				dec(`[{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}]`, `"tool_use"`)},
			[]string{"thinking:hm", "text:I will", "tool_use:toolu_1"}, "tool_use"},
		{"a later text replaces the earlier text of the same message",
			[]Assistant{dec(`[{"type":"text","text":"I"}]`, "null"), dec(`[{"type":"text","text":"I will"}]`, `"end_turn"`)},
			[]string{"text:I will"}, "end_turn"},
		{"two tool calls with different ids both stay",
			[]Assistant{dec(`[{"type":"tool_use","id":"a","input":{}}]`, "null"), dec(`[{"type":"tool_use","id":"b","input":{}}]`, "null")},
			[]string{"tool_use:a", "tool_use:b"}, ""},
		{"a copy under another message id starts over",
			[]Assistant{dec(`[{"type":"text","text":"old"}]`, "null"), func() Assistant { a := dec(`[{"type":"text","text":"new"}]`, "null"); a.ID = "msg_2"; return a }()},
			[]string{"text:new"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.copies[0]
			for _, c := range tt.copies[1:] {
				got = MergeAssistant(got, c)
			}
			if !reflect.DeepEqual(texts(got), tt.want) || got.StopReason != tt.stop {
				t.Errorf("got %v stop %q, want %v stop %q", texts(got), got.StopReason, tt.want, tt.stop)
			}
		})
	}
}

func TestNDJSONReader(t *testing.T) {
	t.Run("messages come out in order, blank lines and CRLF are skipped, a last line without newline counts", func(t *testing.T) {
		in := seedKeepAlive + "\n\n  \r\n" + seedCancel + "\r\n" + `{"type":"system","subtype":"init"}`
		r := NewNDJSONReader(strings.NewReader(in), 0)
		var kinds []Kind
		for {
			m, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, m.Kind)
		}
		if want := []Kind{KindKeepAlive, KindControlCancelRequest, KindSystem}; !reflect.DeepEqual(kinds, want) {
			t.Errorf("got %v, want %v", kinds, want)
		}
	})
	t.Run("a bad line is reported with its number and the next line still decodes", func(t *testing.T) {
		r := NewNDJSONReader(strings.NewReader(seedKeepAlive+"\n{oops\n"+seedCancel+"\n"), 0)
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		_, err := r.Next()
		var le *LineError
		if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrSyntax) {
			t.Fatalf("got %v", err)
		}
		if m, err := r.Next(); err != nil || m.Kind != KindControlCancelRequest {
			t.Fatalf("got %v %v", m.Kind, err)
		}
	})
	t.Run("a line over the cap is skipped whole and the stream stays in step", func(t *testing.T) {
		long := `{"type":"keep_alive","pad":"` + strings.Repeat("x", 200<<10) + `"}`
		r := NewNDJSONReader(strings.NewReader(long+"\n"+seedCancel+"\n"), 1024)
		if _, err := r.Next(); !errors.Is(err, ErrLineTooLong) {
			t.Fatalf("got %v", err)
		}
		if m, err := r.Next(); err != nil || m.Kind != KindControlCancelRequest {
			t.Fatalf("got %v %v", m.Kind, err)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("got %v, want EOF", err)
		}
	})
	t.Run("a read error ends the stream with that error", func(t *testing.T) {
		boom := errors.New("boom")
		r := NewNDJSONReader(io.MultiReader(strings.NewReader(seedKeepAlive+"\n"), errReader{boom}), 0)
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(); !errors.Is(err, boom) {
			t.Fatalf("got %v", err)
		}
	})
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func FuzzDecode(f *testing.F) {
	for _, s := range []string{seedKeepAlive, seedAssistant, seedResult, seedUser, seedInterrupt, seedPermMode, seedInit,
		seedInitSDK, seedAskUser, seedMCPMessage, seedAllow, seedAnswers, seedError, seedInitAns, seedMCPAnswer, seedCancel,
		`{"type":"user","message":{"content":` + nest(3) + `}}`, `{"type":"x"}`, `[]`, ``,
		`{"type":"control_response","response":{"subtype":"success","request_id":"i","response":{"models":[{"value":"m","displayName":"M"},"n",1,null],"commands":[{"name":"c"},"d",{}]}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Decode(line)
		if err != nil {
			return // refusing is fine; panicking is not
		}
		if cr := m.ControlResponse; cr != nil && cr.Initialize != nil {
			// Initialize's lists keep only named entries, and a bounded number.
			ms, cs := cr.Initialize.ModelList(), cr.Initialize.CommandList()
			if len(ms) > maxListed || len(cs) > maxListed || slices.ContainsFunc(ms, func(m Model) bool { return m.Value == "" }) ||
				slices.ContainsFunc(cs, func(c Command) bool { return c.Name == "" }) {
				t.Fatalf("lists %+v %+v", ms, cs)
			}
		}
		if m.Type == "" || m.Kind.String() == "" || len(m.Raw) == 0 {
			t.Fatalf("decoded message without type or raw: %+v", m)
		}
		if strings.ContainsRune(string(line), '\n') {
			return // the reader would split it into lines
		}
		// The same bytes through the stream reader decode to the same kind.
		r := NewNDJSONReader(strings.NewReader(string(line)), 0)
		m2, err := r.Next()
		if err != nil || m2.Kind != m.Kind || string(m2.Raw) != string(m.Raw) {
			t.Fatalf("reader disagrees: %v %v vs %v", err, m2.Kind, m.Kind)
		}
	})
}

// Wait before each Next, as the WebSocket reader does, changes nothing
// Next returns: lines, a bad line, a last line without newline, a read error.
func TestWaitBeforeNextChangesNothing(t *testing.T) {
	boom := errors.New("boom")
	in := seedKeepAlive + "\n{oops\n\n" + seedCancel + "\r\n" + `{"type":"system","subtype":"init"}`
	for _, src := range []func() io.Reader{
		func() io.Reader { return strings.NewReader(in) },
		func() io.Reader { return io.MultiReader(strings.NewReader(in+"\n"), errReader{boom}) },
		func() io.Reader { return &chunkReader{data: []byte(in), cuts: []int{1, 5, 40, 41, 90}} },
	} {
		read := func(wait bool) (got []string) {
			r := NewNDJSONReader(src(), 0)
			for range 10 {
				if wait {
					r.Wait()
				}
				m, err := r.Next()
				got = append(got, fmt.Sprint(m.Kind, err))
				var le *LineError
				if err != nil && !errors.As(err, &le) {
					return got
				}
			}
			return got
		}
		if plain, waited := read(false), read(true); !reflect.DeepEqual(plain, waited) {
			t.Errorf("with Wait %v, without %v", waited, plain)
		}
	}
}
