package main

import (
	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/cli"
)

// tokensCmd manages the API's scoped bearer tokens. No running gateway is
// needed.
func (a *app) tokensCmd() *cobra.Command {
	var label, scope string
	c := &cobra.Command{Use: "tokens COMMAND", Short: "manage scoped bearer tokens for the TCP API",
		Example: "  gateway tokens add --label ci --scope read,send\n  gateway tokens list\n  gateway tokens remove t_1a2b"}
	c.PersistentFlags().BoolVar(&a.json, "json", false, `print JSON; a failure is {"error": ..., "code": ...} on stdout`)
	add := a.verb(&cobra.Command{Use: "add --label LABEL [--scope SCOPES]", Short: "add a token and print it (shown only now)", Args: cli.Nargs(0, 0),
		Example: "  gateway tokens add --label ci --scope read,send"}, false,
		func(o *cli.IO, _ []string) error {
			if label == "" {
				return cli.Usagef("tokens add needs --label")
			}
			return cli.TokenAdd(o, label, scope)
		})
	add.Flags().StringVar(&label, "label", "", "label of the new token")
	add.Flags().StringVar(&scope, "scope", "read", "comma-separated scopes of the new token: read (GETs, events), send (messages, idle), approve (permission prompts, held messages, control), files (attach files from the files directory to a send)")
	return group(c, add,
		a.verb(&cobra.Command{Use: "list", Short: "list tokens (never their secrets)", Args: cli.Nargs(0, 0), Example: "  gateway tokens list --json"}, false,
			func(o *cli.IO, _ []string) error { return cli.TokenList(o) }),
		a.verb(&cobra.Command{Use: "remove ID", Short: "remove a token (ID: as list shows it, or a unique start of it)", Args: cli.Nargs(1, 1), Example: "  gateway tokens remove t_1a2b"}, false,
			func(o *cli.IO, args []string) error { return cli.TokenRemove(o, args[0]) }),
	)
}
