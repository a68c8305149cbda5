package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sessiongateway/gateway/api"
)

// TokenView is a token as tokens list and add --json print it.
type TokenView struct {
	ID         string     `json:"id"`
	Label      string     `json:"label"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	Token      string     `json:"token,omitempty"` // only when added
}

func tokenView(r api.TokenRecord) TokenView {
	v := TokenView{ID: r.ID, Label: r.Label, Scopes: []string{}, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsed}
	for _, s := range strings.Split(r.Scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			v.Scopes = append(v.Scopes, s)
		}
	}
	return v
}

// TokenAdd adds a scoped bearer token for the TCP API and prints it once.
func TokenAdd(o *IO, label, scope string) error {
	scopes, err := api.ParseScopes(scope)
	if err != nil {
		return Usagef("--scope: %v", err)
	}
	tok, rec, err := api.NewTokenFile(o.StateDir, nil).Add(label, scopes)
	if err != nil {
		return err
	}
	v := tokenView(rec)
	v.Token = string(tok)
	o.Print(v, func(w io.Writer) { fmt.Fprintln(w, v.Token) })
	o.Note("token %s (%s, scopes %s) added; it is shown only now", rec.ID, rec.Label, rec.Scopes)
	return nil
}

// TokenList lists the tokens, never their secrets.
func TokenList(o *IO) error {
	recs, err := api.NewTokenFile(o.StateDir, nil).List()
	if err != nil {
		return err
	}
	vs := make([]TokenView, 0, len(recs))
	for _, r := range recs {
		vs = append(vs, tokenView(r))
	}
	o.Print(vs, func(w io.Writer) {
		if len(vs) == 0 {
			fmt.Fprintln(w, "no tokens: add one for the TCP API with "+o.Cmd("tokens add --label LABEL --scope read,send"))
			return
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tLABEL\tSCOPES\tCREATED\tLAST USED")
		for _, v := range vs {
			used := "never"
			if v.LastUsedAt != nil {
				used = v.LastUsedAt.Local().Format("2006-01-02 15:04")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.ID, v.Label, strings.Join(v.Scopes, ","), v.CreatedAt.Local().Format("2006-01-02 15:04"), used)
		}
		tw.Flush()
	})
	return nil
}

// TokenRemove removes the token whose id, or unique start of one, is id.
func TokenRemove(o *IO, id string) error {
	store := api.NewTokenFile(o.StateDir, nil)
	recs, err := store.List()
	if err != nil {
		return err
	}
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	full, ok, err := Resolve(id, ids)
	if err != nil {
		return err
	}
	if !ok {
		return notFound("no token %q (see %s)", id, o.Cmd("tokens list"))
	}
	rec, ok, err := store.Remove(full)
	if err != nil {
		return err
	}
	if !ok {
		return notFound("no token %q (see %s)", id, o.Cmd("tokens list"))
	}
	v := tokenView(rec)
	o.Print(v, func(w io.Writer) { fmt.Fprintf(w, "removed %s (%s)\n", rec.ID, rec.Label) })
	return nil
}
