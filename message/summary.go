package message

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Summary is what a prompt asks for, on one line of at most width runes:
// the command, the file, the questions, the plan; else its description,
// else its input. The CLI's tables and the approver's notices both show it.
func (p PermissionRequest) Summary(width int) string {
	var in map[string]any
	_ = json.Unmarshal(p.Input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	var s string
	switch p.ToolName {
	case "AskUserQuestion":
		qs := make([]string, len(p.Questions))
		for i, q := range p.Questions {
			qs[i] = q.Question
		}
		s = strings.Join(qs, " / ")
	case "ExitPlanMode":
		s = "plan: " + str("plan")
	case "Bash":
		s = str("command")
	case "Edit", "MultiEdit", "Write", "Read":
		s = str("file_path")
	case "NotebookEdit":
		s = str("notebook_path")
	case "WebFetch":
		s = str("url")
	case "WebSearch":
		s = str("query")
	case "Grep", "Glob":
		s = strings.TrimSpace(str("pattern") + " " + str("path"))
	case "Task", "Agent":
		s = str("description")
	}
	if s == "" {
		s = p.Description
	}
	if s == "" {
		var b bytes.Buffer
		if json.Compact(&b, p.Input) == nil {
			s = b.String()
		}
	}
	return OneLine(s, width)
}

// OneLine folds whitespace runs (newlines included) into single spaces and
// cuts s to at most width runes, so text from a session can neither break
// a table row nor fake a line of a notice.
func OneLine(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

// Describe is one line about q as question i (0-based) of a prompt:
// its number, text, header, whether it takes several options, and its
// numbered options, as the approver's answer grammar accepts them.
func (q Question) Describe(i int) string {
	var tags []string
	if q.Header != "" {
		tags = append(tags, q.Header)
	}
	if q.MultiSelect {
		tags = append(tags, "several")
	}
	s := fmt.Sprintf("%d %q", i+1, q.Question)
	if len(tags) > 0 {
		s += " (" + strings.Join(tags, ", ") + ")"
	}
	return s + ": " + q.ListOptions()
}

// ListOptions lists q's options numbered from 1, as answers may name them.
func (q Question) ListOptions() string {
	opts := make([]string, len(q.Options))
	for i, o := range q.Options {
		opts[i] = fmt.Sprintf("%d %q", i+1, o)
	}
	return strings.Join(opts, ", ")
}
