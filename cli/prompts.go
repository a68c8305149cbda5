package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/message/answerfmt"
	"github.com/sessiongateway/gateway/message/eventfmt"
)

// Permissions lists pending permission prompts (all: with the recently
// settled ones).
func Permissions(ctx context.Context, o *IO, all bool) error {
	ps, err := o.Client().Permissions(ctx, all)
	if err != nil {
		return err
	}
	if ps == nil {
		ps = []message.PermissionRequest{}
	}
	o.Print(ps, func(w io.Writer) {
		if len(ps) == 0 {
			fmt.Fprintln(w, "no pending permission prompts: a remote session's prompt shows here until answered (watch for them: "+o.Cmd("watch")+")")
			return
		}
		eventfmt.Prompts(o.hinted(w), ps, all)
	})
	return nil
}

// promptID finds the prompt id, or the unique start of one, that id names
// among the pending prompts; not finding one is not an error (deny then
// looks at held messages).
func promptID(ctx context.Context, c *api.Client, id string) (string, bool, error) {
	ps, err := c.Permissions(ctx, false)
	if err != nil {
		return "", false, err
	}
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	full, ok, err := Resolve(id, ids)
	if err != nil || ok {
		return full, ok, err
	}
	return id, false, nil
}

// prompt is promptID for verbs that take only a prompt: an id no pending
// prompt starts with goes to the gateway as typed, which says why it is
// not one (settled, withdrawn, unknown).
func prompt(ctx context.Context, c *api.Client, id string) (string, error) {
	full, _, err := promptID(ctx, c, id)
	return full, err
}

// answered prints a settled prompt, or it as JSON.
func answered(o *IO, verb string, p message.PermissionRequest) error {
	o.Print(p, func(w io.Writer) { eventfmt.Answered(w, verb, p) })
	return nil
}

// Allow allows a permission prompt with the options' rules, suggestions,
// mode or input.
func Allow(ctx context.Context, o *IO, id string, opts answerfmt.AllowOptions) error {
	a, err := opts.Answer("cli")
	if err != nil {
		return Usagef("%v", err)
	}
	c := o.Client()
	if id, err = prompt(ctx, c, id); err != nil {
		return err
	}
	p, err := c.AnswerPermission(ctx, id, a)
	if err != nil {
		return err
	}
	return answered(o, "allowed", p)
}

// Answer answers an AskUserQuestion prompt: each pair is
// "Question=Option".
func Answer(ctx context.Context, o *IO, id string, pairs []string) error {
	c := o.Client()
	id, err := prompt(ctx, c, id)
	if err != nil {
		return err
	}
	p, err := c.Permission(ctx, id)
	if err != nil {
		return err
	}
	if len(p.Questions) == 0 {
		return fmt.Errorf("%s is a %s prompt, not a question: use %s or %s", p.ID, p.ToolName, o.Cmd("allow "+p.ID), o.Cmd("deny "+p.ID))
	}
	answers, err := answerfmt.ParseAnswers(p.Questions, pairs)
	if err != nil {
		return Usagef("%v", err)
	}
	p, err = c.AnswerPermission(ctx, p.ID, message.PermissionAnswer{Behavior: message.BehaviorAllow, Answers: answers, By: "cli"})
	if err != nil {
		return err
	}
	o.Print(p, func(w io.Writer) {
		fmt.Fprintf(w, "answered %s\n", p.ID)
		for _, q := range p.Questions {
			fmt.Fprintf(w, "  %s = %s\n", q.Question, strings.Join(answers[q.Question], ", "))
		}
	})
	return nil
}
