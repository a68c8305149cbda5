package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/cli"
	"github.com/sessiongateway/gateway/leg/claude"
)

// hookCmd is what the hooks `gateway hooks install` writes run: it hands
// Claude Code's hook input to the running gateway and prints its decision.
// It always exits 0: with no gateway, or on any failure, it decides nothing
// and Claude Code asks at its terminal (the reason goes to stderr).
func (a *app) hookCmd() *cobra.Command {
	c := &cobra.Command{Use: "hook EVENT", Short: "run as a Claude Code hook (" + strings.Join(claude.HookEvents, ", ") + "); gateway hooks install writes these",
		Args:    cli.Nargs(1, 1),
		Example: "  echo '{...}' | gateway hook PermissionRequest"}
	c.RunE = func(_ *cobra.Command, args []string) error {
		if !slices.Contains(claude.HookEvents, args[0]) {
			return cli.Usagef("hook takes one of %s, not %q", strings.Join(claude.HookEvents, ", "), args[0])
		}
		if err := claude.RunHook(a.ctx, filepath.Join(a.stateDir, "hooks.sock"), args[0], os.Stdin, a.e.stdout); err != nil {
			fmt.Fprintln(a.e.stderr, "gateway hook:", err)
		}
		return nil
	}
	return c
}

func (a *app) awayCmd() *cobra.Command {
	c := &cobra.Command{Use: "away [on|off]", Short: "say you are away from your terminals: local prompts wait for an answer from elsewhere",
		Long: "With no argument, print the away switch. `away on`: a local session's prompt (from its\n" +
			"PermissionRequest hook) waits until someone answers it here, on the console, a phone or\n" +
			"another session, or until the hook's own timeout. `away off`: a prompt goes back to its\n" +
			"terminal when nobody answers within serve's --local-prompt-wait (default 20s).",
		Args: cli.Nargs(0, 1), Example: "  gateway away on\n  gateway away off\n  gateway away --json"}
	return a.verb(c, true, func(o *cli.IO, args []string) error {
		to := ""
		if len(args) == 1 {
			to = args[0]
		}
		return cli.Away(a.ctx, o, to)
	})
}
