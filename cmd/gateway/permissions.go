package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/approver"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/message/eventfmt"
)

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
	eventfmt.Prompts(e.stdout, ps, *all)
	return exitOK
}

// answered prints a settled prompt, or as JSON.
func answered(e *env, asJSON bool, verb string, p message.PermissionRequest) int {
	if asJSON {
		printJSON(e.stdout, p)
		return exitOK
	}
	eventfmt.Answered(e.stdout, verb, p)
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
	var o approver.AllowOptions
	fs.StringVar(&o.Input, "input", "", "replace the tool's input with this JSON object")
	fs.Var((*multi)(&o.Rules), "rule", "also add a permission rule: Tool or Tool(content), e.g. 'Bash(go test ./...)' (repeatable)")
	fs.StringVar(&o.Destination, "rule-destination", "", "where rules are saved: "+strings.Join(message.RuleDestinations, ", ")+" (default localSettings)")
	fs.Var((*multi)(&o.Suggestions), "suggestion", "also apply the session's suggestion N, as gateway permissions numbers them (repeatable)")
	fs.StringVar(&o.Mode, "mode", "", "switch the permission mode in the same answer (plan approval): "+strings.Join(message.PermissionModes, ", "))
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(e.stderr, "usage: gateway allow ID [--suggestion N]... [--mode MODE] [--input JSON] [--rule RULE]... [--rule-destination D] [--json]")
		return exitUsage
	}
	a, err := o.Answer("cli")
	if err != nil {
		fmt.Fprintf(e.stderr, "gateway: %v\n", err)
		return exitUsage
	}
	p, err := clientFor(*sd).AnswerPermission(ctx, pos[0], a)
	if err != nil {
		return answerFailed(e, *asJSON, err)
	}
	return answered(e, *asJSON, "allowed", p)
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
	answers, err := approver.ParseAnswers(p.Questions, pos[1:])
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
