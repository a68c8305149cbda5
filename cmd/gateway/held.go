package main

import (
	"context"
	"fmt"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
)

// runHeld lists the inbound messages held for a decision; release and deny
// decide them.
func runHeld(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "held")
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	hs, err := clientFor(*sd).Held(ctx)
	if err != nil {
		return fail(e, err)
	}
	if *asJSON {
		if hs == nil {
			hs = []message.Held{}
		}
		printJSON(e.stdout, hs)
		return exitOK
	}
	for _, h := range hs {
		fmt.Fprintf(e.stdout, "%s from %s (%s): %s\n  %s\n", h.Message.ID, h.Message.FromName, h.Message.From, h.Reason, h.Message.Body)
	}
	return exitOK
}

func runRelease(ctx context.Context, e *env, args []string) int {
	return decide(ctx, e, "release", args)
}

// runDeny denies a permission prompt, or else a held message with that id.
func runDeny(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "deny")
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print the settled prompt as JSON")
	msg := fs.String("message", "", "why, told to the session's model (a prompt) or to the sender (a held message)")
	reason := fs.String("reason", "", "the same as --message")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(e.stderr, "usage: gateway deny ID [--message TEXT]")
		return exitUsage
	}
	if *msg != "" && *reason != "" && *msg != *reason {
		fmt.Fprintln(e.stderr, "gateway: --message and --reason are the same flag; give one")
		return exitUsage
	}
	text := *msg
	if text == "" {
		text = *reason
	}
	c := clientFor(*sd)
	p, err := c.AnswerPermission(ctx, pos[0], message.PermissionAnswer{Behavior: message.BehaviorDeny, Message: text, By: "cli"})
	if err == nil {
		return answered(e, *asJSON, "denied", p)
	}
	if !api.IsNotFound(err) {
		return answerFailed(e, *asJSON, err)
	}
	// Not a prompt: a held message, as before prompts existed.
	if err := c.Decide(ctx, pos[0], false, text); err != nil {
		if api.IsNotFound(err) {
			return fail(e, fmt.Errorf("no permission prompt or held message has id %s (see gateway permissions, gateway held)", pos[0]))
		}
		return fail(e, err)
	}
	if *asJSON {
		printJSON(e.stdout, map[string]string{"id": pos[0], "action": "deny"})
	}
	return exitOK
}

func decide(ctx context.Context, e *env, action string, args []string) int {
	fs := newFlags(e, action)
	sd := stateDirFlag(fs, e)
	reason := fs.String("reason", "", "reason told to the sender (deny)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(e.stderr, "usage: gateway %s ID\n", action)
		return exitUsage
	}
	if err := clientFor(*sd).Decide(ctx, pos[0], action == "release", *reason); err != nil {
		return fail(e, err)
	}
	return exitOK
}
