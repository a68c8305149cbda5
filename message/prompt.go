package message

import (
	"encoding/json"
	"fmt"
	"strings"
)

// PromptKind is what a prompt asks for, and so which verbs answer it.
type PromptKind string

const (
	// PromptToolUse asks to run a tool: allow (with suggestions, rules or
	// edited input) or deny.
	PromptToolUse PromptKind = "tool_use"
	// PromptQuestion is AskUserQuestion: answer with options, or deny.
	// Allowing it alone would send no answers.
	PromptQuestion PromptKind = "question"
	// PromptPlan is ExitPlanMode: approve (allow, optionally switching the
	// permission mode in the same answer) or deny to keep planning.
	PromptPlan PromptKind = "plan_approval"
	// PromptOther is a prompt that names no tool.
	PromptOther PromptKind = "other"
)

// Tools whose prompts are not plain tool uses.
const (
	ToolAskUserQuestion = "AskUserQuestion"
	ToolExitPlanMode    = "ExitPlanMode"
)

// KindOf is the kind of a prompt for tool.
func KindOf(tool string) PromptKind {
	switch tool {
	case ToolAskUserQuestion:
		return PromptQuestion
	case ToolExitPlanMode:
		return PromptPlan
	case "":
		return PromptOther
	}
	return PromptToolUse
}

// Verbs are the CLI verbs (and approver replies) that answer a prompt of
// kind k, the usual one first.
func (k PromptKind) Verbs() []string {
	if k == PromptQuestion {
		return []string{"answer", "deny"}
	}
	return []string{"allow", "deny"}
}

// Classify sets Kind and Verbs from the tool name, so every listing of
// the prompt says how to answer it.
func (p *PermissionRequest) Classify() {
	p.Kind = KindOf(p.ToolName)
	p.Verbs = p.Kind.Verbs()
}

// Permission update types (updatedPermissions in a permission answer,
// docs/protocols/claude-ai-remote.md#permission-prompts-and-answers; Claude Code's
// permission_suggestions use the same shapes).
const (
	UpdateAddRules          = "addRules"
	UpdateReplaceRules      = "replaceRules"
	UpdateRemoveRules       = "removeRules"
	UpdateSetMode           = "setMode"
	UpdateAddDirectories    = "addDirectories"
	UpdateRemoveDirectories = "removeDirectories"
)

// MaxSuggestions caps the permission suggestions kept with a prompt.
const MaxSuggestions = 16

// PermissionUpdate is one change to the session's permissions that an
// answer carries: rules added, replaced or removed, the mode set,
// directories added or removed. A session offers some with each prompt
// (PermissionRequest.Suggestions), an answer picks them by number.
type PermissionUpdate struct {
	Type        string           `json:"type"`
	Rules       []PermissionRule `json:"rules,omitempty"`
	Behavior    string           `json:"behavior,omitempty"` // rules: allow, deny or ask
	Destination string           `json:"destination,omitempty"`
	Mode        string           `json:"mode,omitempty"`        // setMode
	Directories []string         `json:"directories,omitempty"` // add/removeDirectories
}

// Valid says whether u is one of the update shapes the protocol knows.
func (u PermissionUpdate) Valid() bool {
	switch u.Type {
	case UpdateAddRules, UpdateReplaceRules, UpdateRemoveRules:
		return len(u.Rules) > 0
	case UpdateSetMode:
		return u.Mode != ""
	case UpdateAddDirectories, UpdateRemoveDirectories:
		return len(u.Directories) > 0
	}
	return false
}

// String is u on one line, such as `addRules allow Bash(npm test) to
// localSettings` or `setMode acceptEdits for session`.
func (u PermissionUpdate) String() string {
	parts := []string{u.Type}
	switch u.Type {
	case UpdateSetMode:
		parts = append(parts, u.Mode)
	case UpdateAddDirectories, UpdateRemoveDirectories:
		parts = append(parts, strings.Join(u.Directories, ", "))
	default:
		if u.Behavior != "" {
			parts = append(parts, u.Behavior)
		}
		rules := make([]string, len(u.Rules))
		for i, r := range u.Rules {
			rules[i] = r.String()
		}
		parts = append(parts, strings.Join(rules, ", "))
	}
	if u.Destination != "" {
		parts = append(parts, "in "+u.Destination)
	}
	return OneLine(strings.Join(parts, " "), 200)
}

// ParseSuggestions reads a can_use_tool request's permission_suggestions:
// the updates the protocol knows, at most MaxSuggestions, in their order.
// Anything else is skipped, so the numbers an answer uses are the ones
// shown.
func ParseSuggestions(raw json.RawMessage) []PermissionUpdate {
	var list []json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &list) != nil {
		return nil
	}
	var out []PermissionUpdate
	for _, item := range list {
		var w struct {
			Type  string `json:"type"`
			Rules []struct {
				ToolName    string `json:"toolName"`
				RuleContent string `json:"ruleContent"`
			} `json:"rules"`
			Behavior    string   `json:"behavior"`
			Destination string   `json:"destination"`
			Mode        string   `json:"mode"`
			Directories []string `json:"directories"`
		}
		if json.Unmarshal(item, &w) != nil {
			continue
		}
		u := PermissionUpdate{Type: w.Type, Behavior: w.Behavior, Destination: w.Destination, Mode: w.Mode, Directories: w.Directories}
		for _, r := range w.Rules {
			u.Rules = append(u.Rules, PermissionRule{ToolName: r.ToolName, RuleContent: r.RuleContent})
		}
		if !u.Valid() {
			continue
		}
		if out = append(out, u); len(out) == MaxSuggestions {
			break
		}
	}
	return out
}

// Bytes is about what p holds in memory: its variable-length fields (the
// tool input above all, up to a wire line). Caps on what prompts hold
// count it.
func (p PermissionRequest) Bytes() int {
	n := len(p.Input) + len(p.Description) + len(p.ToolName) + len(p.ToolUseID) + len(p.RequestID) + len(p.SessionID) + len(p.Address)
	for _, q := range p.Questions {
		n += len(q.Question) + len(q.Header)
		for _, o := range q.Options {
			n += len(o)
		}
	}
	for _, u := range p.Suggestions {
		n += len(u.Type) + len(u.Behavior) + len(u.Destination) + len(u.Mode)
		for _, r := range u.Rules {
			n += len(r.ToolName) + len(r.RuleContent)
		}
		for _, d := range u.Directories {
			n += len(d)
		}
	}
	return n
}

// VerbHint is the command that answers p, for a one-line notice: `gateway
// answer ID "Q=OPTION"` for a question, `gateway allow ID [--mode MODE]`
// for a plan, `gateway allow ID [--suggestion N]` when the session offers
// suggestions.
func (p PermissionRequest) VerbHint() string {
	switch p.Kind {
	case PromptQuestion:
		return fmt.Sprintf("gateway answer %s \"QUESTION=OPTION\"", p.ID)
	case PromptPlan:
		return fmt.Sprintf("gateway allow %s [--mode acceptEdits]", p.ID)
	}
	if len(p.Suggestions) > 0 {
		return fmt.Sprintf("gateway allow %s [--suggestion 1]", p.ID)
	}
	return "gateway allow " + p.ID
}
