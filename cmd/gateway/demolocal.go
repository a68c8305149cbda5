package main

import (
	"os"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/cli"
	localdemo "github.com/sessiongateway/gateway/demo"
	"github.com/sessiongateway/gateway/message"
)

// demoLocalCmd runs demo-claude and demo-qwen, each a process of this
// binary (the hidden --session), until SIGINT or SIGTERM.
func (a *app) demoLocalCmd() *cobra.Command {
	var session string
	c := &cobra.Command{Use: "demo-local", Short: "run two demo sessions, Claude Code and Qwen Code protocol, that answer what they are sent",
		Args: cli.Nargs(0, 0), Example: "  gateway demo-local\n  gateway demo-local --json"}
	c.Flags().StringVar(&session, "session", "", "run one demo session (started by demo-local)")
	_ = c.Flags().MarkHidden("session")
	return a.verb(c, true, func(o *cli.IO, _ []string) error {
		if session != "" {
			return localdemo.RunChild(a.ctx, message.Protocol(session), version, o.Stdout, o.JSON)
		}
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		return localdemo.RunLocal(a.ctx, localdemo.LocalConfig{Out: o.Stdout, JSON: o.JSON, Cmd: o.Cmd,
			Command: func(p message.Protocol) *exec.Cmd { return exec.Command(exe, "demo-local", "--session", string(p)) }})
	})
}
