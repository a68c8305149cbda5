package main

import (
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/cli"
	"github.com/sessiongateway/gateway/leg/claude"
)

// hooksCmd edits the Claude Code settings file that makes local sessions'
// prompts reach the gateway; the editing is leg/claude's (hooksettings.go).
func (a *app) hooksCmd() *cobra.Command {
	var settings, project, program string
	target := func(c *cobra.Command) *cobra.Command {
		c.Flags().StringVar(&settings, "settings", "", "the settings file (default: the user's, $CLAUDE_CONFIG_DIR or ~/.claude/settings.json)")
		c.Flags().StringVar(&project, "project", "", "a project's local settings instead: DIR/.claude/settings.local.json (kept out of git)")
		c.MarkFlagsMutuallyExclusive("settings", "project")
		return c
	}
	run := func(verb string, edit func(path string, cmd claude.HookCommand) (claude.HooksReport, error)) func(o *cli.IO, _ []string) error {
		return func(o *cli.IO, _ []string) error {
			path, err := claude.HookSettingsPath(settings, project)
			if err != nil {
				return err
			}
			cmd, err := claude.NewHookCommand(program, o.StateDir)
			if err != nil {
				return err
			}
			rep, err := edit(path, cmd)
			if err != nil {
				return err
			}
			if verb == "status" {
				rep.Endpoint = filepath.Join(o.StateDir, "hooks.sock")
				rep.Listening = claude.HookEndpointListening(a.ctx, rep.Endpoint)
			}
			o.Print(rep, func(w io.Writer) { rep.WriteText(w, verb) })
			return nil
		}
	}
	install := target(&cobra.Command{Use: "install", Short: "add the gateway's hooks to a Claude Code settings file", Args: cli.Nargs(0, 0),
		Example: "  gateway hooks install\n  gateway hooks install --project ."})
	install.Flags().StringVar(&program, "program", "", "the gateway binary the hooks run (default: this one)")
	uninstall := target(&cobra.Command{Use: "uninstall", Short: "take exactly the gateway's hooks out again", Args: cli.Nargs(0, 0),
		Example: "  gateway hooks uninstall"})
	status := target(&cobra.Command{Use: "status", Short: "which of the gateway's hooks the settings file has", Args: cli.Nargs(0, 0),
		Example: "  gateway hooks status --json"})
	return group(&cobra.Command{Use: "hooks COMMAND", Short: "install the Claude Code hooks that bring local sessions' prompts here",
		Example: "  gateway hooks install\n  gateway hooks status"},
		a.verb(install, true, run("install", claude.InstallHooks)),
		a.verb(uninstall, true, run("uninstall", claude.UninstallHooks)),
		a.verb(status, true, run("status", claude.HooksStatus)))
}
