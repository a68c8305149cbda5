package main

import (
	"context"
	"fmt"

	"github.com/sessiongateway/gateway/federation"
)

// runFederation is the federation verb group; the work is the federation
// package's, the answer the running gateway's.
func runFederation(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 && args[0] == "keygen" {
		return federation.KeygenMain(args[1:], e.getenv, defaultStateDir(e.getenv), e.stdout, e.stderr)
	}
	fs := newFlags(e, "federation")
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 || pos[0] != "status" {
		fmt.Fprintln(e.stderr, "usage: gateway federation status [--json] | keygen [--force] [--show]")
		return exitUsage
	}
	raw, err := clientFor(*sd).Federation(ctx)
	if err == nil {
		err = federation.WriteStatus(e.stdout, raw, *asJSON)
	}
	if err != nil {
		return fail(e, err)
	}
	return exitOK
}
