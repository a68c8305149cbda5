package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/cli"
	"github.com/sessiongateway/gateway/message"
)

// runCmd and stopCmd start and stop hosted sessions: the real CLI run
// headless by the gateway (leg/hosted).
func (a *app) runCmd() *cobra.Command {
	var spec message.StartSpec
	var follow bool
	c := &cobra.Command{Use: "run claude|qwen|claude-bg [PROMPT]", Short: "start a Claude Code or Qwen Code session the gateway runs headless, or a background agent",
		Args:    cli.Nargs(1, 2),
		Example: "  gateway run claude --cwd ~/src/api --name api \"run the tests\"\n  gateway run qwen --mode plan --follow"}
	f := c.Flags()
	f.StringVar(&spec.Cwd, "cwd", "", "the directory it works in (default: this one)")
	f.StringVar(&spec.Name, "name", "", "its name, its address hosted:NAME (default AGENT-XXXXXX)")
	f.StringVar(&spec.PermissionMode, "mode", "", "its permission mode: default, acceptEdits, plan, bypassPermissions")
	f.StringVar(&spec.Model, "model", "", "its model")
	f.BoolVar(&follow, "follow", false, "then watch its output")
	return a.verb(c, true, func(o *cli.IO, args []string) error {
		spec.Agent = args[0]
		if !slices.Contains(message.StartAgents, spec.Agent) {
			return cli.Usagef("run takes %s, not %q", strings.Join(message.StartAgents, ", "), spec.Agent)
		}
		if len(args) == 2 {
			spec.Prompt = args[1]
		}
		return cli.RunSession(a.ctx, o, spec, follow)
	})
}

func (a *app) stopCmd() *cobra.Command {
	c := &cobra.Command{Use: "stop NAME", Short: "stop a session the gateway started (gateway run); it is not resumed",
		Args: cli.Nargs(1, 1), Example: "  gateway stop api"}
	return a.verb(c, true, func(o *cli.IO, args []string) error { return cli.StopSession(a.ctx, o, args[0]) })
}
