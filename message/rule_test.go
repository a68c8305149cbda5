package message

import (
	"strings"
	"testing"
	"unicode"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    PermissionRule
		wantErr bool
	}{
		{"a bare tool matches every use", "WebFetch", PermissionRule{ToolName: "WebFetch"}, false},
		{"a tool with content keeps the content as written", "Bash(go test ./...)", PermissionRule{ToolName: "Bash", RuleContent: "go test ./..."}, false},
		{"content may hold parentheses", "Bash(echo (a))", PermissionRule{ToolName: "Bash", RuleContent: "echo (a)"}, false},
		{"surrounding spaces are ignored", "  Read(/src/**)  ", PermissionRule{ToolName: "Read", RuleContent: "/src/**"}, false},
		{"an MCP tool name is a tool name", "mcp__github__create_issue", PermissionRule{ToolName: "mcp__github__create_issue"}, false},
		{"an empty rule is refused", "", PermissionRule{}, true},
		{"content without a tool is refused", "(ls)", PermissionRule{}, true},
		{"unclosed content is refused", "Bash(ls", PermissionRule{}, true},
		{"text after the content is refused", "Bash(ls)x", PermissionRule{}, true},
		{"empty content is refused", "Bash()", PermissionRule{}, true},
		{"a tool name with a space is refused", "Bash ls", PermissionRule{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRule(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("ParseRule(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// FuzzParseRule: a rule ParseRule accepts is printed back to the same rule.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"Bash", "Bash(go test ./...)", "Bash(echo (a))", " Read(/src/**) ", "Bash(", "()", "Bash()x", "mcp__a__b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		if r.ToolName == "" || strings.ContainsAny(r.ToolName, "()") || strings.ContainsFunc(r.ToolName, unicode.IsSpace) {
			t.Fatalf("%q gave the bad tool name %q", s, r.ToolName)
		}
		again, err := ParseRule(r.String())
		if err != nil || again != r {
			t.Fatalf("%q: %+v printed as %q reads back as %+v, %v", s, r, r.String(), again, err)
		}
	})
}
