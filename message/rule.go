package message

import (
	"fmt"
	"strings"
	"unicode"
)

// RuleDestinations are the settings scopes a permission rule may be saved
// to (PermissionAnswer.RuleDestination).
var RuleDestinations = []string{"localSettings", "userSettings", "projectSettings", "session", "cliArg"}

// ParseRule reads `Tool` or `Tool(content)`, as Claude Code writes
// permission rules.
func ParseRule(s string) (PermissionRule, error) {
	s = strings.TrimSpace(s)
	tool, rest, hasContent := strings.Cut(s, "(")
	tool = strings.TrimSpace(tool)
	switch {
	case tool == "":
		return PermissionRule{}, fmt.Errorf("rule %q: want Tool or Tool(content), such as Bash(go test ./...)", s)
	case strings.ContainsRune(tool, ')') || strings.ContainsFunc(tool, unicode.IsSpace):
		return PermissionRule{}, fmt.Errorf("rule %q: the tool name %q has spaces or parentheses", s, tool)
	case !hasContent:
		return PermissionRule{ToolName: tool}, nil
	case !strings.HasSuffix(rest, ")"):
		return PermissionRule{}, fmt.Errorf("rule %q: the content must end with )", s)
	}
	content := rest[:len(rest)-1]
	if content == "" {
		return PermissionRule{}, fmt.Errorf("rule %q: empty content; write %s alone to match every use", s, tool)
	}
	return PermissionRule{ToolName: tool, RuleContent: content}, nil
}

// String writes the rule the way ParseRule reads it.
func (r PermissionRule) String() string {
	if r.RuleContent == "" {
		return r.ToolName
	}
	return r.ToolName + "(" + r.RuleContent + ")"
}
