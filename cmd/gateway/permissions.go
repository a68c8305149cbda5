package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// ruleDestinations are the settings scopes --rule-destination takes.
var ruleDestinations = []string{"localSettings", "userSettings", "projectSettings", "session", "cliArg"}

func runPermissions(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "permissions")
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print a JSON array")
	all := fs.Bool("all", false, "include recently answered and withdrawn prompts")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 0 {
		fmt.Fprintln(e.stderr, "usage: gateway permissions [--all] [--json]")
		return exitUsage
	}
	ps, err := clientFor(*sd).Permissions(ctx, *all)
	if err != nil {
		return fail(e, err)
	}
	if *asJSON {
		if ps == nil {
			ps = []message.PermissionRequest{}
		}
		printJSON(e.stdout, ps)
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if *all {
		fmt.Fprintln(tw, "ID\tSESSION\tTOOL\tSTATE\tSUMMARY")
	} else {
		fmt.Fprintln(tw, "ID\tSESSION\tTOOL\tSUMMARY")
	}
	for _, p := range ps {
		if *all {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.ID, p.SessionID, p.ToolName, p.State, summary(p))
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, p.SessionID, p.ToolName, summary(p))
		}
	}
	tw.Flush()
	return exitOK
}

// summaryWidth caps a summary so a table row stays one line.
const summaryWidth = 100

// summary is a one-line view of what a prompt asks for: the command, the
// file, the questions, the plan.
func summary(p message.PermissionRequest) string {
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
	return oneLine(s, summaryWidth)
}

// oneLine folds whitespace runs (newlines included) into single spaces and
// cuts s to at most width runes.
func oneLine(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

// parseRule reads `Tool` or `Tool(content)`, as Claude Code writes
// permission rules.
func parseRule(s string) (message.PermissionRule, error) {
	s = strings.TrimSpace(s)
	tool, rest, hasContent := strings.Cut(s, "(")
	tool = strings.TrimSpace(tool)
	switch {
	case tool == "":
		return message.PermissionRule{}, fmt.Errorf("rule %q: want Tool or Tool(content), such as Bash(go test ./...)", s)
	case strings.ContainsRune(tool, ')') || strings.ContainsFunc(tool, unicode.IsSpace):
		return message.PermissionRule{}, fmt.Errorf("rule %q: the tool name %q has spaces or parentheses", s, tool)
	case !hasContent:
		return message.PermissionRule{ToolName: tool}, nil
	case !strings.HasSuffix(rest, ")"):
		return message.PermissionRule{}, fmt.Errorf("rule %q: the content must end with )", s)
	}
	content := rest[:len(rest)-1]
	if content == "" {
		return message.PermissionRule{}, fmt.Errorf("rule %q: empty content; write %s alone to match every use", s, tool)
	}
	return message.PermissionRule{ToolName: tool, RuleContent: content}, nil
}

// formatRule writes a rule the way parseRule reads it.
func formatRule(r message.PermissionRule) string {
	if r.RuleContent == "" {
		return r.ToolName
	}
	return r.ToolName + "(" + r.RuleContent + ")"
}

// answered prints a settled prompt, or as JSON.
func answered(e *env, asJSON bool, verb string, p message.PermissionRequest) int {
	if asJSON {
		printJSON(e.stdout, p)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "%s %s (%s: %s)\n", verb, p.ID, p.ToolName, summary(p))
	if p.Answer != nil && len(p.Answer.Rules) > 0 {
		dest := p.Answer.RuleDestination
		if dest == "" {
			dest = "localSettings"
		}
		rules := make([]string, len(p.Answer.Rules))
		for i, r := range p.Answer.Rules {
			rules[i] = formatRule(r)
		}
		fmt.Fprintf(e.stdout, "  rules for %s: %s\n", dest, strings.Join(rules, ", "))
	}
	return exitOK
}

// answerFailed reports a refused answer: on stdout as JSON with --json, like
// send does, else on stderr.
func answerFailed(e *env, asJSON bool, err error) int {
	var ae *api.APIError
	if asJSON && errors.As(err, &ae) {
		printJSON(e.stdout, ae.Body)
		return exitError
	}
	return fail(e, err)
}

func runAllow(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "allow")
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print the settled prompt as JSON")
	input := fs.String("input", "", "replace the tool's input with this JSON object")
	var rules multi
	fs.Var(&rules, "rule", "also add a permission rule: Tool or Tool(content), e.g. 'Bash(go test ./...)' (repeatable)")
	dest := fs.String("rule-destination", "", "where rules are saved: "+strings.Join(ruleDestinations, ", ")+" (default localSettings)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(e.stderr, "usage: gateway allow ID [--input JSON] [--rule RULE]... [--rule-destination D] [--json]")
		return exitUsage
	}
	a := message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "cli", RuleDestination: *dest}
	if *input != "" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(*input), &obj); err != nil || obj == nil {
			fmt.Fprintf(e.stderr, "gateway: --input must be a JSON object, such as '{\"command\":\"ls\"}'\n")
			return exitUsage
		}
		a.UpdatedInput = json.RawMessage(*input)
	}
	for _, r := range rules {
		rule, err := parseRule(r)
		if err != nil {
			fmt.Fprintf(e.stderr, "gateway: --rule %v\n", err)
			return exitUsage
		}
		a.Rules = append(a.Rules, rule)
	}
	if *dest != "" && !slices.Contains(ruleDestinations, *dest) {
		fmt.Fprintf(e.stderr, "gateway: --rule-destination %q: want one of %s\n", *dest, strings.Join(ruleDestinations, ", "))
		return exitUsage
	}
	p, err := clientFor(*sd).AnswerPermission(ctx, pos[0], a)
	if err != nil {
		return answerFailed(e, *asJSON, err)
	}
	return answered(e, *asJSON, "allowed", p)
}

func isNotFound(err error) bool {
	var ae *api.APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

func runAnswer(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "answer")
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print the settled prompt as JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) < 2 {
		fmt.Fprintln(e.stderr, `usage: gateway answer ID "Question=Option"... (Question: its text, header or number; Option: its label or number; several options for a multi-select question by repeating it or as a JSON list)`)
		return exitUsage
	}
	c := clientFor(*sd)
	p, err := c.Permission(ctx, pos[0])
	if err != nil {
		return fail(e, err)
	}
	if len(p.Questions) == 0 {
		return fail(e, fmt.Errorf("%s is a %s prompt, not a question: use gateway allow or gateway deny", p.ID, p.ToolName))
	}
	answers, err := parseAnswers(p.Questions, pos[1:])
	if err != nil {
		fmt.Fprintf(e.stderr, "gateway: %v\n", err)
		return exitUsage
	}
	p, err = c.AnswerPermission(ctx, p.ID, message.PermissionAnswer{Behavior: message.BehaviorAllow, Answers: answers, By: "cli"})
	if err != nil {
		return answerFailed(e, *asJSON, err)
	}
	if *asJSON {
		printJSON(e.stdout, p)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "answered %s\n", p.ID)
	for _, q := range p.Questions {
		fmt.Fprintf(e.stdout, "  %s = %s\n", q.Question, strings.Join(answers[q.Question], ", "))
	}
	return exitOK
}

// parseAnswers reads "Question=Option" specs; the parser lives in the
// router, which reads the approver's answer replies with it too.
var parseAnswers = router.ParseAnswers

// printPrompt shows a pending prompt and how to answer it.
func printPrompt(w io.Writer, p message.PermissionRequest) {
	if len(p.Questions) > 0 {
		fmt.Fprintf(w, "question %s from %s:\n", p.ID, p.SessionID)
		for i, q := range p.Questions {
			fmt.Fprintf(w, "  %s\n", router.DescribeQuestion(i, q))
		}
		ex := make([]string, len(p.Questions))
		for i, q := range p.Questions {
			name := q.Header
			if name == "" {
				name = strconv.Itoa(i + 1)
			}
			opt := "1"
			if len(q.Options) > 0 {
				opt = q.Options[0]
			}
			ex[i] = strconv.Quote(name + "=" + opt)
		}
		fmt.Fprintf(w, "  answer: gateway answer %s %s\n", p.ID, strings.Join(ex, " "))
		fmt.Fprintf(w, "  or:     gateway deny %s --message TEXT\n", p.ID)
		return
	}
	fmt.Fprintf(w, "permission %s from %s: %s %s\n", p.ID, p.SessionID, p.ToolName, summary(p))
	fmt.Fprintf(w, "  allow: gateway allow %s%s\n", p.ID, ruleHint(p))
	fmt.Fprintf(w, "  deny:  gateway deny %s --message TEXT\n", p.ID)
}

// ruleHint suggests the rule that would allow this use from now on, for
// tools where a rule makes sense.
func ruleHint(p message.PermissionRequest) string {
	switch p.ToolName {
	case "AskUserQuestion", "ExitPlanMode", "EnterPlanMode":
		return ""
	case "Bash":
		var in struct{ Command string }
		if json.Unmarshal(p.Input, &in) == nil && in.Command != "" && !strings.ContainsAny(in.Command, "'\n") {
			return fmt.Sprintf(" [--rule 'Bash(%s)']", in.Command)
		}
	}
	return fmt.Sprintf(" [--rule '%s']", p.ToolName)
}
