package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sessiongateway/gateway/api"
)

// runHealth is a probe for service managers and the container HEALTHCHECK:
// a FROM scratch image has no curl, so the binary asks itself. It exits 0
// when the running gateway answers /healthz (or, with --ready, /readyz)
// with 200, and 1 otherwise, saying why on stderr.
func runHealth(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "health")
	sd := stateDirFlag(fs, e)
	base := fs.String("url", "", "probe the TCP API at this base URL (http://host:port) instead of the control socket")
	ready := fs.Bool("ready", false, "probe /readyz (every enabled leg ready) instead of /healthz (process alive)")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 0 {
		fmt.Fprintln(e.stderr, "usage: gateway health [--state-dir D | --url http://HOST:PORT] [--ready] [--timeout D]")
		return exitUsage
	}
	path := "/healthz"
	if *ready {
		path = "/readyz"
	}
	c := clientFor(*sd)
	if *base != "" {
		// /healthz and /readyz answer without a token: probes need no secret.
		c = api.NewTCPClient(*base, "")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	body, err := c.Health(ctx, path)
	if err != nil {
		fmt.Fprintf(e.stderr, "gateway: health: %v\n", err)
		return exitError
	}
	fmt.Fprintln(e.stdout, body)
	return exitOK
}
