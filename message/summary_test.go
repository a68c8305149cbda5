package message

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSummaryIsOneLine(t *testing.T) {
	const width = 100 // the CLI's table width
	questions := []Question{
		{Question: "Which approach?", Header: "Approach", Options: []string{"Option A (Recommended)", "Option B"}},
		{Question: "Which features?", Header: "Features", MultiSelect: true, Options: []string{"Logging", "Metrics", "Tracing"}},
	}
	tests := []struct {
		name string
		p    PermissionRequest
		want string
	}{
		{"a Bash prompt shows its command", PermissionRequest{ToolName: "Bash", Input: json.RawMessage(`{"command":"go test ./...","description":"run tests"}`)}, "go test ./..."},
		{"a multi-line command is folded", PermissionRequest{ToolName: "Bash", Input: json.RawMessage(`{"command":"set -e\n  make\n"}`)}, "set -e make"},
		{"a question prompt shows its questions", PermissionRequest{ToolName: "AskUserQuestion", Questions: questions}, "Which approach? / Which features?"},
		{"a plan shows its text", PermissionRequest{ToolName: "ExitPlanMode", Input: json.RawMessage(`{"plan":"# Plan\n1. fix it"}`)}, "plan: # Plan 1. fix it"},
		{"an edit shows its file", PermissionRequest{ToolName: "Edit", Input: json.RawMessage(`{"file_path":"/src/a.go","old_string":"x"}`)}, "/src/a.go"},
		{"an unknown tool shows its description", PermissionRequest{ToolName: "mcp__x__y", Description: "Does y", Input: json.RawMessage(`{"a":1}`)}, "Does y"},
		{"an unknown tool without one shows its input", PermissionRequest{ToolName: "mcp__x__y", Input: json.RawMessage(`{ "a": 1 }`)}, `{"a":1}`},
		{"a long one is cut", PermissionRequest{ToolName: "Bash", Input: json.RawMessage(`{"command":"` + strings.Repeat("é", 150) + `"}`)}, strings.Repeat("é", width-1) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Summary(width); got != tt.want {
				t.Fatalf("Summary = %q, want %q", got, tt.want)
			}
		})
	}
}
