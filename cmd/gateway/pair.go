package main

import (
	"context"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/console"
)

// runPair prints a one-time link, and its QR code, that signs a browser in.
func runPair(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "pair")
	sd := stateDirFlag(fs, e)
	scope := fs.String("scope", "", "scopes beside read the browser gets: approve (answer prompts, decide held messages), send, files")
	ttl := fs.String("ttl", "10m", "how long the link works (at most 24h); it works once")
	base := fs.String("url", "", "the console's address as the phone reaches it, when not the --api address")
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	p, err := clientFor(*sd).Pair(ctx, api.PairBody{Scopes: *scope, TTL: *ttl})
	if err == nil {
		err = console.PrintPairing(e.stdout, p, *base)
	}
	if err != nil {
		return fail(e, err)
	}
	return exitOK
}
