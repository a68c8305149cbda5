package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/cli"
)

// healthCmd is a probe for service managers and the container HEALTHCHECK:
// a FROM scratch image has no curl, so the binary asks itself. It exits 0
// when the running gateway answers /healthz (or, with --ready, /readyz)
// with 200, and 1 otherwise, saying why.
func (a *app) healthCmd() *cobra.Command {
	var base string
	var ready bool
	var timeout time.Duration
	c := &cobra.Command{Use: "health", Short: "exit 0 when the running gateway answers /healthz (--ready: /readyz)", Args: cli.Nargs(0, 0),
		Example: "  gateway health\n  gateway health --ready --url http://127.0.0.1:8080"}
	c.Flags().StringVar(&base, "url", "", "probe the TCP API at this base URL (http://host:port) instead of the control socket")
	c.Flags().BoolVar(&ready, "ready", false, "probe /readyz (every enabled leg ready) instead of /healthz (process alive)")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "give up after this long")
	return a.verb(c, true, func(o *cli.IO, _ []string) error {
		path := "/healthz"
		if ready {
			path = "/readyz"
		}
		client := o.Client()
		if base != "" {
			// /healthz and /readyz answer without a token: probes need no secret.
			client = api.NewTCPClient(base, "")
		}
		ctx, cancel := context.WithTimeout(a.ctx, timeout)
		defer cancel()
		body, err := client.Health(ctx, path)
		if err != nil {
			return fmt.Errorf("health: %w", err)
		}
		_, err = fmt.Fprintln(o.Stdout, body) // one line of JSON, --json or not
		return err
	})
}
