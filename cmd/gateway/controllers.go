package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/transport/uds/qwen"
)

// runControllers manages the controller grants the gateway's Qwen inbox
// honours: programs the user trusts to have their messages delivered under
// mode parity. The file lives in the state directory and keeps only hashes;
// no running gateway is needed, it re-reads the file on every connection.
func runControllers(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, "usage: gateway controllers add --label X | list [--json] | remove ID")
		return exitUsage
	}
	sub, args := args[0], args[1:]
	fs := newFlags(e, "controllers "+sub)
	sd := stateDirFlag(fs, e)
	label := fs.String("label", "", "label of the new grant (add)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if err := safefile.EnsureDir(*sd); err != nil {
		return fail(e, err)
	}
	store := qwen.NewControllers(controllersPath(*sd), clock.Real{})
	switch sub {
	case "add":
		if *label == "" || len(pos) != 0 {
			fmt.Fprintln(e.stderr, "usage: gateway controllers add --label X")
			return exitUsage
		}
		tok, c, err := store.Add(*label)
		if err != nil {
			return fail(e, err)
		}
		if *asJSON {
			printJSON(e.stdout, map[string]string{"id": c.ID, "label": c.Label, "token": string(tok)})
		} else {
			fmt.Fprintln(e.stdout, string(tok))
			fmt.Fprintf(e.stderr, "controller %s (%s) added; the token above is shown only now\n", c.ID, c.Label)
		}
		return exitOK
	case "list":
		cs, err := store.List()
		if err != nil {
			return fail(e, err)
		}
		if *asJSON {
			out := make([]map[string]any, 0, len(cs))
			for _, c := range cs {
				out = append(out, map[string]any{"id": c.ID, "label": c.Label, "created_at": c.CreatedAt})
			}
			printJSON(e.stdout, out)
			return exitOK
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tLABEL\tCREATED")
		for _, c := range cs {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.ID, c.Label, c.CreatedAt.Local().Format("2006-01-02 15:04"))
		}
		tw.Flush()
		return exitOK
	case "remove":
		if len(pos) != 1 {
			fmt.Fprintln(e.stderr, "usage: gateway controllers remove ID")
			return exitUsage
		}
		c, ok, err := store.Remove(pos[0])
		if err != nil {
			return fail(e, err)
		}
		if !ok {
			fmt.Fprintf(e.stderr, "gateway: no controller %q (see gateway controllers list)\n", pos[0])
			return exitError
		}
		fmt.Fprintf(e.stdout, "removed %s (%s)\n", c.ID, c.Label)
		return exitOK
	}
	fmt.Fprintf(e.stderr, "gateway: unknown controllers command %q (want add, list or remove)\n", sub)
	return exitUsage
}
