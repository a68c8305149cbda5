package eventfmt

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/sessiongateway/gateway/message"
)

// Prompt shows a pending prompt and how to answer it.
func Prompt(w io.Writer, p message.PermissionRequest) {
	if len(p.Questions) > 0 {
		fmt.Fprintf(w, "question %s from %s:\n", p.ID, p.SessionID)
		for i, q := range p.Questions {
			fmt.Fprintf(w, "  %s\n", q.Describe(i))
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
	what := "permission"
	if kindOf(p) == message.PromptPlan {
		what = "plan approval"
	}
	fmt.Fprintf(w, "%s %s from %s: %s %s\n", what, p.ID, p.SessionID, p.ToolName, p.Summary(SummaryWidth))
	for i, u := range p.Suggestions {
		fmt.Fprintf(w, "  suggestion %d: %s\n", i+1, u)
	}
	fmt.Fprintf(w, "  allow: %s%s\n", withKind(p).VerbHint(), ruleHint(p))
	fmt.Fprintf(w, "  deny:  gateway deny %s --message TEXT\n", p.ID)
}

// kindOf is p's kind, from its tool when a leg left it out.
func kindOf(p message.PermissionRequest) message.PromptKind {
	if p.Kind == "" {
		return message.KindOf(p.ToolName)
	}
	return p.Kind
}

func withKind(p message.PermissionRequest) message.PermissionRequest {
	p.Kind = kindOf(p)
	return p
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

// Prompts prints prompts as the table `gateway permissions` shows, with
// each prompt's kind (which says how to answer it): a HOST column when any prompt carries a federation host, a STATE column when
// settled ones are listed too.
func Prompts(w io.Writer, ps []message.PermissionRequest, withState bool) {
	hosts := slices.ContainsFunc(ps, func(p message.PermissionRequest) bool { return p.Host != "" })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(id, host, session, tool, kind, state, summary string) {
		cols := []string{id}
		if hosts {
			cols = append(cols, host)
		}
		cols = append(cols, session, tool, kind)
		if withState {
			cols = append(cols, state)
		}
		fmt.Fprintln(tw, strings.Join(append(cols, summary), "\t"))
	}
	row("ID", "HOST", "SESSION", "TOOL", "KIND", "STATE", "SUMMARY")
	for _, p := range ps {
		row(p.ID, OrDash(p.Host), promptSession(p), p.ToolName, string(kindOf(p)), string(p.State), p.Summary(SummaryWidth))
	}
	tw.Flush()
}

// promptSession names a prompt's session as `gateway sessions` does (its
// name, else its id), with how a local one's prompt came: "work-08 (hook)".
func promptSession(p message.PermissionRequest) string {
	s := p.SessionID
	if p.Name != "" {
		s = p.Name
	}
	if p.Source != "" && p.Source != message.SourceRemote {
		s += " (" + string(p.Source) + ")"
	}
	return s
}

// Answered confirms a settled prompt: verb (allowed, denied) and what the
// answer changed besides: rules, suggestions, the mode.
func Answered(w io.Writer, verb string, p message.PermissionRequest) {
	fmt.Fprintf(w, "%s %s (%s: %s)\n", verb, p.ID, p.ToolName, p.Summary(SummaryWidth))
	a := p.Answer
	if a == nil {
		return
	}
	if len(a.Rules) > 0 {
		dest := a.RuleDestination
		if dest == "" {
			dest = "localSettings"
		}
		rules := make([]string, len(a.Rules))
		for i, r := range a.Rules {
			rules[i] = r.String()
		}
		fmt.Fprintf(w, "  rules for %s: %s\n", dest, strings.Join(rules, ", "))
	}
	for _, n := range a.Suggestions {
		if n >= 1 && n <= len(p.Suggestions) {
			fmt.Fprintf(w, "  suggestion %d: %s\n", n, p.Suggestions[n-1])
		}
	}
	if a.Mode != "" {
		fmt.Fprintf(w, "  permission mode: %s\n", a.Mode)
	}
}
