package main

import (
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/cli"
	"github.com/sessiongateway/gateway/mcp"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/message/answerfmt"
)

// commands are gateway's commands, in the order help lists them.
func (a *app) commands() []*cobra.Command {
	return []*cobra.Command{
		a.serveCmd(), a.configCmd(), a.statusCmd(), a.sessionsCmd(), a.sendCmd(), a.watchCmd(),
		a.heldCmd(), a.releaseCmd(), a.permissionsCmd(), a.allowCmd(), a.denyCmd(), a.answerCmd(),
		a.outboxCmd(), a.remoteCmd(), a.demoLocalCmd(), a.demoCloudCmd(), a.idleCmd(), a.controllersCmd(), a.pairCmd(),
		a.tokensCmd(), a.federationCmd(), a.mcpCmd(), a.healthCmd(), a.versionCmd(), a.awayCmd(), a.hookCmd(), a.hooksCmd(), a.runCmd(), a.stopCmd(), a.aliasWorkerCmd(),
	}
}

func (a *app) sessionsCmd() *cobra.Command {
	return a.verb(&cobra.Command{Use: "sessions", Short: "list every reachable session", Args: cli.Nargs(0, 0),
		Example: "  gateway sessions\n  gateway sessions --json"}, true,
		func(o *cli.IO, _ []string) error { return cli.Sessions(a.ctx, o) })
}

func (a *app) sendCmd() *cobra.Command {
	var so cli.SendOptions
	c := &cobra.Command{Use: "send ADDRESS TEXT", Short: "send a message to a session", Args: cli.Nargs(1, 2),
		Long: "Send TEXT to the session at ADDRESS (a name, name [ref], a socket path, bridge:<id> or did:...);\n" +
			"TEXT - reads it from stdin, --text-file from a file (either at most 512 KiB).\n" +
			"Prints the message id; with --wait, its final receipt, and the exit code says whether it\n" +
			"was delivered (3: another final receipt, 4: none before --timeout).",
		Example: "  gateway send work-08 \"run the tests\"\n  gateway send work-08 \"ship it\" --wait --timeout 1m\n  gateway send work-08 \"see this\" --file ~/.local/state/gateway/files/notes.md"}
	f := c.Flags()
	f.StringVar(&so.Mode, "mode", "prompting", "attested permission mode: bypass or prompting")
	f.BoolVar(&so.Wait, "wait", false, "wait for a final receipt and print it; the exit code says whether it was delivered")
	f.DurationVar(&so.Timeout, "timeout", 30*time.Second, "how long --wait waits")
	f.StringVar(&so.FromName, "from-name", "", "display name to send as (default: the gateway's name)")
	f.StringArrayVar(&so.Files, "file", nil, "attach `FILE` from the gateway's files directory (serve --files-dir; default <state-dir>/files) (repeatable)")
	f.StringVar(&so.TextFile, "text-file", "", "send the text of `FILE` instead of TEXT (at most 512 KiB)")
	f.BoolVar(&so.Unpaced, "unpaced", false, "send even if the receiver's published limits say it would be dropped (to hear its dropped receipt)")
	return a.verb(c, true, func(o *cli.IO, args []string) error {
		so.To, so.Text = args[0], strings.Join(args[1:], "")
		return cli.Send(a.ctx, o, so)
	})
}

func (a *app) watchCmd() *cobra.Command {
	var since int64
	c := &cobra.Command{Use: "watch", Short: "print events as they happen", Args: cli.Nargs(0, 0),
		Example: "  gateway watch\n  gateway watch --since 0 --json"}
	c.Flags().Int64Var(&since, "since", -1, "replay kept events after this id (0 for all kept)")
	return a.verb(c, true, func(o *cli.IO, _ []string) error { return cli.Watch(a.ctx, o, since) })
}

func (a *app) idleCmd() *cobra.Command {
	var wait bool
	var timeout time.Duration
	c := &cobra.Command{Use: "idle ADDRESS", Short: "ask a peer to say when it is idle", Args: cli.Nargs(1, 1),
		Example: "  gateway idle work-08 --wait --timeout 5m"}
	c.Flags().BoolVar(&wait, "wait", false, "wait for the notice and print it")
	c.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "how long --wait waits")
	return a.verb(c, true, func(o *cli.IO, args []string) error { return cli.Idle(a.ctx, o, args[0], wait, timeout) })
}

func (a *app) heldCmd() *cobra.Command {
	return a.verb(&cobra.Command{Use: "held", Short: "list inbound messages held for a decision", Args: cli.Nargs(0, 0),
		Example: "  gateway held\n  gateway held --json"}, true,
		func(o *cli.IO, _ []string) error { return cli.Held(a.ctx, o) })
}

func (a *app) releaseCmd() *cobra.Command {
	return a.verb(&cobra.Command{Use: "release ID", Short: "deliver a held message (ID: as held shows it, or any unique start of it)", Args: cli.Nargs(1, 1),
		Example: "  gateway release 3f2a9c1e"}, true,
		func(o *cli.IO, args []string) error { return cli.Release(a.ctx, o, args[0]) })
}

func (a *app) denyCmd() *cobra.Command {
	var msg, reason string
	c := &cobra.Command{Use: "deny ID", Short: "deny a permission prompt or a held message", Args: cli.Nargs(1, 1),
		Long:    "Deny the permission prompt, or else the held message, with this id (or a unique start of it).",
		Example: "  gateway deny p3a9c1e --message \"not on main\"\n  gateway deny 3f2a9c1e --reason spam"}
	c.Flags().StringVar(&msg, "message", "", "why, told to the session's model (a prompt) or to the sender (a held message)")
	c.Flags().StringVar(&reason, "reason", "", "the same as --message")
	return a.verb(c, true, func(o *cli.IO, args []string) error {
		if msg != "" && reason != "" && msg != reason {
			return cli.Usagef("--message and --reason are the same flag; give one")
		}
		if msg == "" {
			msg = reason
		}
		return cli.Deny(a.ctx, o, args[0], msg)
	})
}

func (a *app) permissionsCmd() *cobra.Command {
	var all bool
	c := &cobra.Command{Use: "permissions", Short: "list remote sessions' pending permission prompts", Args: cli.Nargs(0, 0),
		Example: "  gateway permissions\n  gateway permissions --all --json"}
	c.Flags().BoolVar(&all, "all", false, "include recently answered and withdrawn prompts")
	return a.verb(c, true, func(o *cli.IO, _ []string) error { return cli.Permissions(a.ctx, o, all) })
}

func (a *app) allowCmd() *cobra.Command {
	var ao answerfmt.AllowOptions
	c := &cobra.Command{Use: "allow ID", Short: "allow a permission prompt", Args: cli.Nargs(1, 1),
		Example: "  gateway allow p3a9c1e\n  gateway allow p3a9c1e --suggestion 1\n  gateway allow p3a9c1e --rule 'Bash(go test ./...)'"}
	f := c.Flags()
	f.StringVar(&ao.Input, "input", "", "replace the tool's input with this JSON object")
	f.StringArrayVar(&ao.Rules, "rule", nil, "also add a permission `RULE`: Tool or Tool(content), e.g. 'Bash(go test ./...)' (repeatable)")
	f.StringVar(&ao.Destination, "rule-destination", "", "where rules are saved: "+strings.Join(message.RuleDestinations, ", ")+" (default localSettings)")
	f.StringArrayVar(&ao.Suggestions, "suggestion", nil, "also apply the session's suggestion `N`, as gateway permissions numbers them (repeatable)")
	f.StringVar(&ao.Mode, "mode", "", "switch the permission mode in the same answer (plan approval): "+strings.Join(message.PermissionModes, ", "))
	return a.verb(c, true, func(o *cli.IO, args []string) error { return cli.Allow(a.ctx, o, args[0], ao) })
}

func (a *app) answerCmd() *cobra.Command {
	return a.verb(&cobra.Command{Use: "answer ID QUESTION=OPTION...", Short: "answer an AskUserQuestion prompt", Args: cli.Nargs(2, -1),
		Long: "Answer a question prompt. QUESTION is its text, header or number; OPTION its label or number;\n" +
			"several options of a multi-select question by repeating it or as a JSON list.",
		Example: "  gateway answer p3a9c1e \"1=Yes\"\n  gateway answer p3a9c1e \"Which features?=Metrics\" \"Which features?=Logs\""}, true,
		func(o *cli.IO, args []string) error { return cli.Answer(a.ctx, o, args[0], args[1:]) })
}

func (a *app) versionCmd() *cobra.Command {
	return a.verb(&cobra.Command{Use: "version", Short: "print the version (the same as --version)", Args: cli.Nargs(0, 0),
		Example: "  gateway version\n  gateway --version"}, true,
		func(o *cli.IO, _ []string) error { cli.Version(o, version); return nil })
}

func (a *app) mcpCmd() *cobra.Command {
	var opt mcp.StdioOptions
	c := &cobra.Command{Use: "mcp", Short: "serve MCP on stdin/stdout as a session of the running gateway", Args: cli.Nargs(0, 0),
		Example: "  gateway mcp --name reviewer\n  gateway mcp --name laptop --channel   # Claude Code --channels server:gateway"}
	c.Flags().StringVar(&opt.Name, "name", "", "the session name others reach this client by (default: the client's own name)")
	c.Flags().BoolVar(&opt.Channel, "channel", false, "push messages sent to this client into its Claude Code session as channel messages (research preview)")
	return a.verb(c, false, func(o *cli.IO, _ []string) error { return mcp.Stdio(a.ctx, o.Client(), opt, os.Stdin, o.Stdout) })
}

func (a *app) statusCmd() *cobra.Command {
	return a.verb(&cobra.Command{Use: "status", Short: "the running gateway on one screen: legs, sessions, links, what waits, outbox, peers", Args: cli.Nargs(0, 0),
		Example: "  gateway status\n  gateway status --json"}, true,
		func(o *cli.IO, _ []string) error { return cli.Status(a.ctx, o) })
}
