package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/cli"
	"github.com/sessiongateway/gateway/message"
)

// remoteCmd is the remote verb group: claude.ai sessions through the
// gateway's remote leg. ID is a session id, bridge:<id>, or any address
// the gateway resolves.
func (a *app) remoteCmd() *cobra.Command {
	var ro cli.RemoteOptions
	c := &cobra.Command{Use: "remote COMMAND", Short: "remote (claude.ai) sessions: list, watch, control, create",
		Long: "Remote (claude.ai) sessions through the gateway's remote leg. ID is the session id,\n" +
			"bridge:<id>, or any address the gateway resolves. Controls wait for the session's answer\n" +
			"and fail with its error.",
		Example: "  gateway remote sessions\n  gateway remote watch session_01abc\n  gateway remote mode session_01abc plan"}
	c.PersistentFlags().BoolVar(&a.json, "json", false, `print JSON; a failure is {"error": ..., "code": ...} on stdout`)
	sub := func(use, short, example string, lo, hi int, body func(o *cli.IO, args []string) error) *cobra.Command {
		return a.verb(&cobra.Command{Use: use, Short: short, Example: "  gateway remote " + example, Args: cli.Nargs(lo, hi)}, false, body)
	}
	ctl := func(kind message.ControlKind, set func(*message.Control, string)) func(o *cli.IO, args []string) error {
		return func(o *cli.IO, args []string) error {
			m := message.Control{Kind: kind}
			if set != nil {
				set(&m, args[1])
			}
			return cli.RemoteControl(a.ctx, o, args[0], m)
		}
	}
	watch := sub("watch ID", "print one remote session's output, prompts and link state", "watch session_01abc --since 0", 1, 1,
		func(o *cli.IO, args []string) error { return cli.RemoteWatch(a.ctx, o, args[0], ro.Since) })
	watch.Flags().Int64Var(&ro.Since, "since", -1, "replay kept events after this id (0 for all kept)")
	create := sub("create [TEXT]", "create a session (TEXT its first prompt); prints its id", `create --repo acme/api --branch main "fix the flaky test" --follow`, 0, 1,
		func(o *cli.IO, args []string) error { return cli.RemoteCreate(a.ctx, o, strings.Join(args, ""), ro) })
	f := create.Flags()
	f.StringVar(&ro.Env, "env", "", "environment to create it in (see remote environments)")
	f.StringVar(&ro.Title, "title", "", "its title")
	f.StringVar(&ro.Model, "model", "", "its model")
	f.StringVar(&ro.Repo, "repo", "", "a GitHub repository to work on, OWNER/REPO")
	f.StringVar(&ro.Branch, "branch", "", "the repository's branch")
	f.BoolVar(&ro.Follow, "follow", false, "then watch the new session")
	return group(c,
		sub("sessions", "list remote sessions", "sessions --json", 0, 0, func(o *cli.IO, _ []string) error { return cli.RemoteSessions(a.ctx, o) }),
		watch,
		sub("info ID", "what it told the gateway: models, commands, permission mode", "info session_01abc", 1, 1,
			func(o *cli.IO, args []string) error { return cli.RemoteInfo(a.ctx, o, args[0]) }),
		sub("interrupt ID", "stop the session's current turn", "interrupt session_01abc", 1, 1, ctl(message.ControlInterrupt, nil)),
		sub("mode ID MODE", "set its permission mode: default, plan, acceptEdits, bypassPermissions", "mode session_01abc plan", 2, 2,
			ctl(message.ControlSetPermissionMode, func(m *message.Control, v string) { m.Mode = v })),
		sub("model ID MODEL", "set its model (one info lists)", "model session_01abc claude-sonnet-4-5", 2, 2,
			ctl(message.ControlSetModel, func(m *message.Control, v string) { m.Model = v })),
		create,
		sub("title ID TEXT", "set its title", `title session_01abc "release prep"`, 2, 2,
			func(o *cli.IO, args []string) error { return cli.RemoteTitle(a.ctx, o, args[0], args[1]) }),
		sub("archive ID", "archive it", "archive session_01abc", 1, 1, func(o *cli.IO, args []string) error { return cli.RemoteArchive(a.ctx, o, args[0]) }),
		sub("environments", "the environments sessions can be created in", "environments --json", 0, 0,
			func(o *cli.IO, _ []string) error { return cli.RemoteEnvironments(a.ctx, o) }),
	)
}
