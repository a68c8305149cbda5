package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/sessiongateway/gateway/api"
)

// runTokens manages the API's bearer tokens. No running gateway is needed.
func runTokens(ctx context.Context, e *env, args []string) int {
	const use = "usage: gateway tokens add --label L [--scope read,send,approve,files] | list [--json] | remove ID"
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, use)
		return exitUsage
	}
	sub, args := args[0], args[1:]
	fs := newFlags(e, "tokens "+sub)
	sd := stateDirFlag(fs, e)
	label := fs.String("label", "", "label of the new token (add)")
	scope := fs.String("scope", "read", "comma-separated scopes of the new token: read (GETs, events), send (messages, idle), approve (permission prompts, held messages, control), files (attach files from the files directory to a send)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	store := api.NewTokenFile(*sd, nil)
	switch sub {
	case "add":
		if *label == "" || len(pos) != 0 {
			fmt.Fprintln(e.stderr, "usage: gateway tokens add --label L [--scope read,send,approve,files]")
			return exitUsage
		}
		scopes, err := api.ParseScopes(*scope)
		if err != nil {
			fmt.Fprintf(e.stderr, "gateway: --scope: %v\n", err)
			return exitUsage
		}
		tok, rec, err := store.Add(*label, scopes)
		if err != nil {
			return fail(e, err)
		}
		if *asJSON {
			printJSON(e.stdout, map[string]string{"id": rec.ID, "label": rec.Label, "scopes": rec.Scopes, "token": string(tok)})
		} else {
			fmt.Fprintln(e.stdout, string(tok))
			fmt.Fprintf(e.stderr, "token %s (%s, scopes %s) added; it is shown only now\n", rec.ID, rec.Label, rec.Scopes)
		}
		return exitOK
	case "list":
		recs, err := store.List()
		if err != nil {
			return fail(e, err)
		}
		if *asJSON {
			out := make([]map[string]any, 0, len(recs))
			for _, r := range recs {
				m := map[string]any{"id": r.ID, "label": r.Label, "scopes": r.Scopes, "created_at": r.CreatedAt}
				if r.LastUsed != nil {
					m["last_used_at"] = *r.LastUsed
				}
				out = append(out, m)
			}
			printJSON(e.stdout, out)
			return exitOK
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tLABEL\tSCOPES\tCREATED\tLAST USED")
		for _, r := range recs {
			used := "never"
			if r.LastUsed != nil {
				used = r.LastUsed.Local().Format("2006-01-02 15:04")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Label, r.Scopes, r.CreatedAt.Local().Format("2006-01-02 15:04"), used)
		}
		tw.Flush()
		return exitOK
	case "remove":
		if len(pos) != 1 {
			fmt.Fprintln(e.stderr, "usage: gateway tokens remove ID")
			return exitUsage
		}
		rec, ok, err := store.Remove(pos[0])
		if err != nil {
			return fail(e, err)
		}
		if !ok {
			fmt.Fprintf(e.stderr, "gateway: no token %q (see gateway tokens list)\n", pos[0])
			return exitError
		}
		fmt.Fprintf(e.stdout, "removed %s (%s)\n", rec.ID, rec.Label)
		return exitOK
	}
	fmt.Fprintf(e.stderr, "gateway: unknown tokens command %q (want add, list or remove)\n", sub)
	return exitUsage
}
