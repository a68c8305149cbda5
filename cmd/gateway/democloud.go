package main

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/testkit/fakecloud"
)

// runDemoCloud runs testkit/fakecloud's demo on loopback, so people can try
// the remote legs without an account, until ctx ends (SIGINT).
func runDemoCloud(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "demo-cloud")
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	org := fs.String("org", "", "organisation uuid (default: a random one)")
	n := fs.Int("sessions", 2, `sessions to create, titled "demo 1".."demo N"`)
	stateDir := fs.String("state-dir", "", "write the token file under DIR/demo-cloud (default: a new temporary directory)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 0 || *n < 0 {
		fmt.Fprintln(e.stderr, "usage: gateway demo-cloud [--addr 127.0.0.1:0] [--org UUID] [--sessions N] [--state-dir DIR]")
		return exitUsage
	}
	// Anyone who can reach the fake and read the token drives it: never
	// let it face a network.
	if err := fakecloud.CheckLoopback(*addr); err != nil {
		fmt.Fprintf(e.stderr, "gateway: --addr %q: the demo cloud listens on loopback only (127.0.0.1, ::1 or localhost)\n", *addr)
		return exitUsage
	}
	if *org == "" {
		*org = uuid.NewString()
	} else if _, err := uuid.Parse(*org); err != nil {
		fmt.Fprintf(e.stderr, "gateway: --org %q is not a uuid\n", *org)
		return exitUsage
	}

	demo, err := fakecloud.StartDemo(fakecloud.DemoOptions{Addr: *addr, OrgUUID: *org, Sessions: *n, StateDir: *stateDir,
		Logf: func(format string, args ...any) { fmt.Fprintf(e.stderr, format+"\n", args...) }})
	if err != nil {
		return fail(e, err)
	}
	defer demo.Close()
	demo.Explain(e.stdout)
	<-ctx.Done()
	if err := demo.Close(); err != nil {
		return fail(e, err)
	}
	return exitOK
}
