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
	fmt.Fprintf(w, "permission %s from %s: %s %s\n", p.ID, p.SessionID, p.ToolName, p.Summary(SummaryWidth))
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

// Prompts prints prompts as the table `gateway permissions` shows: a HOST
// column when any prompt carries a federation host, a STATE column when
// settled ones are listed too.
func Prompts(w io.Writer, ps []message.PermissionRequest, withState bool) {
	hosts := slices.ContainsFunc(ps, func(p message.PermissionRequest) bool { return p.Host != "" })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(id, host, session, tool, state, summary string) {
		cols := []string{id}
		if hosts {
			cols = append(cols, host)
		}
		cols = append(cols, session, tool)
		if withState {
			cols = append(cols, state)
		}
		fmt.Fprintln(tw, strings.Join(append(cols, summary), "\t"))
	}
	row("ID", "HOST", "SESSION", "TOOL", "STATE", "SUMMARY")
	for _, p := range ps {
		row(p.ID, OrDash(p.Host), p.SessionID, p.ToolName, string(p.State), p.Summary(SummaryWidth))
	}
	tw.Flush()
}
