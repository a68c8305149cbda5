package main

import (
	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/cli"
	"github.com/sessiongateway/gateway/console"
)

// pairCmd prints a one-time link, and its QR code, that signs a browser in.
func (a *app) pairCmd() *cobra.Command {
	var scope, ttl, base string
	c := &cobra.Command{Use: "pair", Short: "print a one-time link and QR code that signs a browser in to the console", Args: cli.Nargs(0, 0),
		Example: "  gateway pair\n  gateway pair --scope approve --ttl 10m"}
	c.Flags().StringVar(&scope, "scope", "", "scopes beside read the browser gets: approve (answer prompts, decide held messages), send, files")
	c.Flags().StringVar(&ttl, "ttl", "10m", "how long the link works (at most 24h); it works once")
	c.Flags().StringVar(&base, "url", "", "the console's address as the phone reaches it, when not the --api address")
	return a.verb(c, true, func(o *cli.IO, _ []string) error {
		p, err := o.Client().Pair(a.ctx, api.PairBody{Scopes: scope, TTL: ttl})
		if err != nil {
			return err
		}
		if o.JSON {
			cli.PrintJSON(o.Stdout, p)
			return nil
		}
		return console.PrintPairing(o.Stdout, p, base)
	})
}
