package fakecloud

import (
	"testing"

	"github.com/sessiongateway/gateway/leg/remote/wire"
)

// The fake's codec is written from the protocol's description, apart from
// the client's; on captured example messages the two must read the same
// thing.
func TestTheFakesCodecReadsTheSeedsMessagesAsTheClientDoes(t *testing.T) {
	tests := []struct {
		name string
		line string
	}{
		{"a user message with string content", `{"type":"user","uuid":"u-1","session_id":"session_01","parent_tool_use_id":null,"message":{"role":"user","content":"Hello"}}`},
		{"a user message with blocks", `{"type":"user","uuid":"u-2","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"toolu_1","content":"x"},{"type":"text","text":"b"}]}}`},
		{"an interrupt", `{"type":"control_request","request_id":"interrupt-1","request":{"subtype":"interrupt"}}`},
		{"a permission mode", `{"type":"control_request","request_id":"perm-1","request":{"subtype":"set_permission_mode","mode":"plan"}}`},
		{"a model switch", `{"type":"control_request","request_id":"m-1","request":{"subtype":"set_model","model":"claude-opus-4-6"}}`},
		{"a permission prompt", `{"type":"control_request","request_id":"r-1","session_id":"session_01","request":{"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"toolu_1","description":"ls","input":{"command":"ls"}}}`},
		{"an allow", `{"type":"control_response","response":{"subtype":"success","request_id":"r-1","response":{"behavior":"allow","updatedInput":{"command":"ls"},"toolUseID":"toolu_1","updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls"}],"behavior":"allow","destination":"localSettings"}]}}}`},
		{"a deny", `{"type":"control_response","response":{"subtype":"success","request_id":"r-2","response":{"behavior":"deny","message":"no"}}}`},
		{"an error answer", `{"type":"control_response","response":{"subtype":"error","request_id":"r-3","error":"Error message"}}`},
		{"a cancel", `{"type":"control_cancel_request","request_id":"abc123"}`},
		{"a keep-alive", `{"type":"keep_alive"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decode([]byte(tt.line))
			if err != nil {
				t.Fatalf("fake: %v", err)
			}
			want, err := wire.Decode([]byte(tt.line))
			if err != nil {
				t.Fatalf("client: %v", err)
			}
			if got.Type != want.Type || got.UUID != want.UUID || got.SessionID != want.SessionID {
				t.Errorf("envelope %q %q %q, client %q %q %q", got.Type, got.UUID, got.SessionID, want.Type, want.UUID, want.SessionID)
			}
			if (got.User != nil) != (want.User != nil) || got.User != nil && got.User.Content.Text() != want.User.Content.Text() {
				t.Errorf("user %+v, client %+v", got.User, want.User)
			}
			if w := want.ControlRequest; w != nil {
				g := got.ControlRequest
				if g == nil || g.RequestID != w.RequestID || g.Subtype != w.SubtypeRaw || g.ToolName != w.ToolName ||
					g.ToolUseID != w.ToolUseID || string(g.Input) != string(w.Input) || g.Mode != w.Mode || g.Model != w.Model {
					t.Errorf("request %+v, client %+v", g, w)
				}
			}
			if want.Cancel != nil && got.RequestID != want.Cancel.RequestID {
				t.Errorf("cancel %q, client %q", got.RequestID, want.Cancel.RequestID)
			}
			if w := want.ControlResponse; w != nil {
				g := got.ControlResponse
				if g == nil || g.Subtype != w.Subtype || g.RequestID != w.RequestID || g.Error != w.Error || (g.Decision != nil) != (w.Decision != nil) {
					t.Fatalf("response %+v, client %+v", g, w)
				}
				if d, wd := g.Decision, w.Decision; d != nil && (d.Behavior != wd.Behavior || d.Message != wd.Message ||
					d.ToolUseID != wd.ToolUseID || string(d.UpdatedInput) != string(wd.UpdatedInput) || len(d.UpdatedPermissions) != len(wd.UpdatedPermissions)) {
					t.Errorf("decision %+v, client %+v", d, wd)
				}
			}
		})
	}
}

func TestTheFakeRefusesWhatIsNotAMessage(t *testing.T) {
	for _, line := range []string{``, `not json`, `[1]`, `{"no":"type"}`, `{"type":7}`, `{"type":"user","uuid":7}`,
		`{"type":"control_request","request_id":"r"}`, `{"type":"control_response"}`,
		`{"type":"user","message":{"content":[1]}}`, `{"type":"control_response","response":{"response":"x"}}`} {
		if _, err := decode([]byte(line)); err == nil {
			t.Errorf("%s: decoded", line)
		}
	}
}
