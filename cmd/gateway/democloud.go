package main

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/cli"

	"github.com/sessiongateway/gateway/demo/fakecloud"
)

// demoCloudCmd runs demo/fakecloud's demo on loopback, so people can
// try the remote legs without an account, until ctx ends (SIGINT).
func (a *app) demoCloudCmd() *cobra.Command {
	var addr, org, stateDir string
	var n int
	c := &cobra.Command{Use: "demo-cloud", Short: "run a fake claude.ai on loopback to try the remote features", Args: cli.Nargs(0, 0),
		Example: "  gateway demo-cloud --sessions 3\n  gateway demo-cloud --json"}
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "loopback address to listen on")
	c.Flags().StringVar(&org, "org", "", "organisation uuid (default: a random one)")
	c.Flags().IntVar(&n, "sessions", 2, `sessions to create, titled "demo 1".."demo N"`)
	c.Flags().StringVar(&stateDir, "state-dir", "", "write the token file under DIR/demo-cloud (default: a new temporary directory)")
	return a.verb(c, true, func(o *cli.IO, _ []string) error {
		if n < 0 {
			return cli.Usagef("--sessions %d: want 0 or more", n)
		}
		// Anyone who can reach the fake and read the token drives it: never
		// let it face a network.
		if err := fakecloud.CheckLoopback(addr); err != nil {
			return cli.Usagef("--addr %q: the demo cloud listens on loopback only (127.0.0.1, ::1 or localhost)", addr)
		}
		if org == "" {
			org = uuid.NewString()
		} else if _, err := uuid.Parse(org); err != nil {
			return cli.Usagef("--org %q is not a uuid", org)
		}
		demo, err := fakecloud.StartDemo(fakecloud.DemoOptions{Addr: addr, OrgUUID: org, Sessions: n, StateDir: stateDir,
			Logf: func(format string, args ...any) { fmt.Fprintf(o.Stderr, format+"\n", args...) }})
		if err != nil {
			return err
		}
		defer demo.Close()
		if o.JSON {
			cli.PrintJSON(o.Stdout, demo.Info())
		} else {
			demo.Explain(o.Stdout)
		}
		<-a.ctx.Done()
		return demo.Close()
	})
}
