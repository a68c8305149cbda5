package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/settings"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/message/eventfmt"
)

const remoteUsage = `usage: gateway remote COMMAND
  sessions [--json]               list remote sessions
  watch ID [--json] [--since N]   print one remote session's output, prompts and link state
  info ID [--json]                what it told the gateway: models, commands, permission mode
  interrupt ID                    stop the session's current turn
  mode ID MODE                    set its permission mode: default, plan, acceptEdits, bypassPermissions
  model ID MODEL                  set its model (one info lists)
Controls wait for the session's answer and fail with its error.
ID is the session id, bridge:<id>, or any address the gateway resolves.`

func runRemote(ctx context.Context, e *env, args []string) int {
	i := settings.SubcommandAt(args, remoteValueFlags)
	if i < 0 {
		if slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" || a == "-help" }) {
			fmt.Fprintln(e.stdout, remoteUsage)
			return exitOK
		}
		fmt.Fprintln(e.stderr, remoteUsage)
		return exitUsage
	}
	// Flags may come before the subcommand too: `remote --json sessions`.
	rest := append(slices.Clone(args[:i]), args[i+1:]...)
	switch args[i] {
	case "help":
		fmt.Fprintln(e.stdout, remoteUsage)
		return exitOK
	case "sessions":
		return remoteSessions(ctx, e, rest)
	case "watch":
		return remoteWatch(ctx, e, rest)
	case "info":
		return remoteControl(ctx, e, "info", "", rest)
	case "interrupt":
		return remoteControl(ctx, e, "interrupt", message.ControlInterrupt, rest)
	case "mode":
		return remoteControl(ctx, e, "mode", message.ControlSetPermissionMode, rest)
	case "model":
		return remoteControl(ctx, e, "model", message.ControlSetModel, rest)
	}
	fmt.Fprintf(e.stderr, "gateway remote: unknown command %q\n%s\n", args[i], remoteUsage)
	return exitUsage
}

// remoteValueFlags are the remote subcommands' flags that take a value.
var remoteValueFlags = []string{"state-dir", "since"}

func remoteSessions(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "remote sessions")
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print a JSON array")
	if pos, err := parse(fs, args); err != nil || len(pos) != 0 {
		if err != nil {
			return flagErr(err)
		}
		fmt.Fprintln(e.stderr, "usage: gateway remote sessions [--json]")
		return exitUsage
	}
	ss, err := clientFor(*sd).RemoteSessions(ctx)
	if err != nil {
		return fail(e, err)
	}
	if *asJSON {
		printJSON(e.stdout, ss)
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSESSION\tSTATUS\tADDRESS")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", eventfmt.OrDash(s.Name), s.SessionID, eventfmt.OrDash(s.Status), s.Address)
	}
	tw.Flush()
	return exitOK
}

func remoteControl(ctx context.Context, e *env, name string, kind message.ControlKind, args []string) int {
	fs := newFlags(e, "remote "+name)
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	want, shape := 2, "ID "+strings.ToUpper(name)
	if kind == message.ControlInterrupt || kind == "" {
		want, shape = 1, "ID"
	}
	if len(pos) != want {
		fmt.Fprintf(e.stderr, "usage: gateway remote %s %s [--json]\n", name, shape)
		return exitUsage
	}
	c := clientFor(*sd)
	ctl := message.Control{Kind: kind}
	switch kind {
	case message.ControlSetPermissionMode:
		ctl.Mode = pos[1]
	case message.ControlSetModel:
		ctl.Model = pos[1]
	}
	addr := c.RemoteAddress(ctx, pos[0])
	var (
		reply any
		info  message.SessionInfo
		r     api.ControlReply
	)
	if kind == "" {
		info, err = c.RemoteInfo(ctx, addr)
		reply = info
	} else {
		r, err = c.Control(ctx, addr, ctl)
		reply = r
	}
	var ae *api.APIError
	switch {
	case err != nil && *asJSON && errors.As(err, &ae):
		printJSON(e.stdout, ae.Body)
		return exitError
	case err != nil:
		return fail(e, err)
	case *asJSON:
		printJSON(e.stdout, reply)
	case kind == "":
		eventfmt.SessionInfo(e.stdout, info)
	default:
		eventfmt.Control(e.stdout, addr, ctl, r.ControlResult)
	}
	return exitOK
}

func remoteWatch(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "remote watch")
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print one JSON event per line")
	since := fs.Int64("since", -1, "replay kept events after this id (0 for all kept)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(e.stderr, "usage: gateway remote watch ID [--json] [--since N]")
		return exitUsage
	}
	c := clientFor(*sd)
	sid, err := c.RemoteSessionID(ctx, pos[0])
	if err != nil {
		return fail(e, err)
	}
	pr := eventfmt.NewTranscript(e.stdout, eventfmt.Prompt)
	if !*asJSON && *since < 0 {
		// Prompts raised before the watch started still wait for an answer.
		ps, err := c.Permissions(ctx, false)
		if err != nil {
			return fail(e, err)
		}
		for _, p := range ps {
			if p.SessionID == sid {
				pr.Event(message.Event{Type: message.EventPermission, Time: p.Created, Permission: &p})
			}
		}
	}
	err = c.Watch(ctx, *since, func(ev message.Event) error {
		if !eventfmt.AboutSession(ev, sid) {
			return nil
		}
		if *asJSON {
			b, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(e.stdout, "%s\n", b)
			return err
		}
		pr.Event(ev)
		return nil
	})
	pr.EndLine()
	if err == nil || errors.Is(err, context.Canceled) {
		return exitOK
	}
	return fail(e, err)
}
