package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

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
  create [--env ID] [--title T] [--model M] [--repo OWNER/REPO [--branch B]] [--follow] [TEXT]
                                  create a session (TEXT its first prompt); prints its id
  title ID TEXT                   set its title
  archive ID                      archive it
  environments [--json]           the environments sessions can be created in
Controls wait for the session's answer and fail with its error.
ID is the session id, bridge:<id>, or any address the gateway resolves.`

// remoteArgs are the remote subcommands' flags; each takes those its verb
// names.
type remoteArgs struct {
	json, follow                    bool
	since                           int64
	env, title, model, repo, branch string
}

// remoteVerb is one remote subcommand: its words, its flags beyond --json,
// and what it does. do returns what --json prints and how to print it
// otherwise; watch verbs stream instead.
type remoteVerb struct {
	words    string
	min, max int
	flags    []string
	do       func(ctx context.Context, c *api.Client, o *remoteArgs, pos []string) (any, func(io.Writer), error)
}

func control(kind message.ControlKind, set func(*message.Control, string)) func(context.Context, *api.Client, *remoteArgs, []string) (any, func(io.Writer), error) {
	return func(ctx context.Context, c *api.Client, _ *remoteArgs, pos []string) (any, func(io.Writer), error) {
		ctl, addr := message.Control{Kind: kind}, c.RemoteAddress(ctx, pos[0])
		if set != nil {
			set(&ctl, pos[1])
		}
		r, err := c.Control(ctx, addr, ctl)
		return r, func(w io.Writer) { eventfmt.Control(w, addr, ctl, r.ControlResult) }, err
	}
}

func sessionChange(do func(ctx context.Context, c *api.Client, addr string, pos []string) (message.Session, error)) func(context.Context, *api.Client, *remoteArgs, []string) (any, func(io.Writer), error) {
	return func(ctx context.Context, c *api.Client, _ *remoteArgs, pos []string) (any, func(io.Writer), error) {
		s, err := do(ctx, c, c.RemoteAddress(ctx, pos[0]), pos)
		return s, func(w io.Writer) { eventfmt.RemoteSession(w, s) }, err
	}
}

var remoteVerbs = map[string]remoteVerb{
	"sessions": {"", 0, 0, nil, func(ctx context.Context, c *api.Client, _ *remoteArgs, _ []string) (any, func(io.Writer), error) {
		ss, err := c.RemoteSessions(ctx)
		return ss, func(w io.Writer) { eventfmt.RemoteSessions(w, ss) }, err
	}},
	"watch": {"ID", 1, 1, []string{"since"}, nil},
	"info": {"ID", 1, 1, nil, func(ctx context.Context, c *api.Client, _ *remoteArgs, pos []string) (any, func(io.Writer), error) {
		info, err := c.RemoteInfo(ctx, c.RemoteAddress(ctx, pos[0]))
		return info, func(w io.Writer) { eventfmt.SessionInfo(w, info) }, err
	}},
	"interrupt": {"ID", 1, 1, nil, control(message.ControlInterrupt, nil)},
	"mode":      {"ID MODE", 2, 2, nil, control(message.ControlSetPermissionMode, func(c *message.Control, v string) { c.Mode = v })},
	"model":     {"ID MODEL", 2, 2, nil, control(message.ControlSetModel, func(c *message.Control, v string) { c.Model = v })},
	"create": {"[TEXT]", 0, 1, []string{"env", "title", "model", "repo", "branch", "follow"}, func(ctx context.Context, c *api.Client, o *remoteArgs, pos []string) (any, func(io.Writer), error) {
		n := message.NewRemoteSession{Title: o.title, EnvironmentID: o.env, Model: o.model, Repo: o.repo, Branch: o.branch, Text: strings.Join(pos, "")}
		s, err := c.CreateRemote(ctx, n)
		return s, func(w io.Writer) { fmt.Fprintln(w, s.SessionID) }, err
	}},
	"title": {"ID TEXT", 2, 2, nil, sessionChange(func(ctx context.Context, c *api.Client, addr string, pos []string) (message.Session, error) {
		return c.RetitleRemote(ctx, addr, pos[1])
	})},
	"archive": {"ID", 1, 1, nil, sessionChange(func(ctx context.Context, c *api.Client, addr string, _ []string) (message.Session, error) {
		return c.ArchiveRemote(ctx, addr)
	})},
	"environments": {"", 0, 0, nil, func(ctx context.Context, c *api.Client, _ *remoteArgs, _ []string) (any, func(io.Writer), error) {
		envs, err := c.Environments(ctx)
		return envs, func(w io.Writer) { eventfmt.Environments(w, envs) }, err
	}},
}

var createHelp = map[string]string{"env": "environment to create it in (see remote environments)", "title": "its title",
	"model": "its model", "repo": "a GitHub repository to work on, OWNER/REPO", "branch": "the repository's branch"}

// remoteVerbFlags registers the flags names lists on fs.
func remoteVerbFlags(fs *flag.FlagSet, o *remoteArgs, names []string) {
	fs.BoolVar(&o.json, "json", false, "print JSON")
	for _, n := range names {
		switch n {
		case "since":
			fs.Int64Var(&o.since, n, -1, "replay kept events after this id (0 for all kept)")
		case "follow":
			fs.BoolVar(&o.follow, n, false, "then watch the new session")
		default:
			fs.StringVar(map[string]*string{"env": &o.env, "title": &o.title, "model": &o.model, "repo": &o.repo, "branch": &o.branch}[n], n, "", createHelp[n])
		}
	}
}

func runRemote(ctx context.Context, e *env, args []string) int {
	i := settings.SubcommandAt(args, remoteValueFlags)
	if i < 0 || args[i] == "help" {
		if i >= 0 || slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" || a == "-help" }) {
			fmt.Fprintln(e.stdout, remoteUsage)
			return exitOK
		}
		fmt.Fprintln(e.stderr, remoteUsage)
		return exitUsage
	}
	v, ok := remoteVerbs[args[i]]
	if !ok {
		fmt.Fprintf(e.stderr, "gateway remote: unknown command %q\n%s\n", args[i], remoteUsage)
		return exitUsage
	}
	fs := newFlags(e, "remote "+args[i])
	sd := stateDirFlag(fs, e)
	o := &remoteArgs{}
	remoteVerbFlags(fs, o, v.flags)
	// Flags may come before the subcommand too: `remote --json sessions`.
	pos, err := parse(fs, append(slices.Clone(args[:i]), args[i+1:]...))
	if err != nil {
		return flagErr(err)
	}
	if len(pos) < v.min || len(pos) > v.max {
		fmt.Fprintf(e.stderr, "usage: gateway remote %s [--json]\n", strings.TrimSpace(args[i]+" "+v.words))
		return exitUsage
	}
	c := clientFor(*sd)
	if v.do == nil {
		return remoteWatch(ctx, e, c, pos[0], o)
	}
	out, text, err := v.do(ctx, c, o, pos)
	var ae *api.APIError
	switch {
	case err != nil && o.json && errors.As(err, &ae):
		printJSON(e.stdout, ae.Body)
		return exitError
	case err != nil:
		return fail(e, err)
	case o.json:
		printJSON(e.stdout, out)
	default:
		text(e.stdout)
	}
	if o.follow {
		o.since = 0 // the new session's whole story: the event ring still has it
		return remoteWatch(ctx, e, c, out.(message.Session).SessionID, o)
	}
	return exitOK
}

// remoteValueFlags are the remote subcommands' flags that take a value.
var remoteValueFlags = []string{"state-dir", "since", "env", "title", "model", "repo", "branch"}

func remoteWatch(ctx context.Context, e *env, c *api.Client, id string, o *remoteArgs) int {
	sid, err := c.RemoteSessionID(ctx, id)
	if err != nil {
		return fail(e, err)
	}
	sw := eventfmt.NewSessionWatch(e.stdout, sid, o.json)
	if !o.json && o.since < 0 {
		// Prompts raised before the watch started still wait for an answer.
		ps, err := c.Permissions(ctx, false)
		if err != nil {
			return fail(e, err)
		}
		sw.Pending(ps)
	}
	err = c.Watch(ctx, o.since, sw.Event)
	sw.End()
	if err == nil || errors.Is(err, context.Canceled) {
		return exitOK
	}
	return fail(e, err)
}
