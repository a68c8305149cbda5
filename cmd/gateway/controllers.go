package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/cli"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/qwen"
)

// controllersCmd manages the controller grants the gateway's Qwen inbox
// honours: programs the user trusts to have their messages delivered under
// mode parity. The file lives in the state directory and keeps only hashes;
// no running gateway is needed, it re-reads the file on every connection.
func (a *app) controllersCmd() *cobra.Command {
	var label string
	c := &cobra.Command{Use: "controllers COMMAND", Short: "manage trusted controller tokens for the Qwen inbox",
		Example: "  gateway controllers add --label voice\n  gateway controllers list\n  gateway controllers remove c_1a2b"}
	c.PersistentFlags().BoolVar(&a.json, "json", false, `print JSON; a failure is {"error": ..., "code": ...} on stdout`)
	store := func(o *cli.IO) (*qwen.Controllers, error) {
		if err := safefile.EnsureDir(o.StateDir); err != nil {
			return nil, err
		}
		return qwen.NewControllers(controllersPath(o.StateDir), clock.Real{}), nil
	}
	type view struct {
		ID        string     `json:"id"`
		Label     string     `json:"label"`
		CreatedAt *time.Time `json:"created_at,omitempty"`
		Token     string     `json:"token,omitempty"`
	}
	add := a.verb(&cobra.Command{Use: "add --label LABEL", Short: "add a grant and print its token (shown only now)", Args: cli.Nargs(0, 0),
		Example: "  gateway controllers add --label voice"}, false, func(o *cli.IO, _ []string) error {
		if label == "" {
			return cli.Usagef("controllers add needs --label")
		}
		st, err := store(o)
		if err != nil {
			return err
		}
		tok, c, err := st.Add(label)
		if err != nil {
			return err
		}
		o.Print(view{ID: c.ID, Label: c.Label, Token: string(tok)}, func(w io.Writer) { fmt.Fprintln(w, string(tok)) })
		o.Note("controller %s (%s) added; the token above is shown only now", c.ID, c.Label)
		return nil
	})
	add.Flags().StringVar(&label, "label", "", "label of the new grant")
	list := a.verb(&cobra.Command{Use: "list", Short: "list grants", Args: cli.Nargs(0, 0), Example: "  gateway controllers list --json"}, false,
		func(o *cli.IO, _ []string) error {
			st, err := store(o)
			if err != nil {
				return err
			}
			cs, err := st.List()
			if err != nil {
				return err
			}
			vs := make([]view, 0, len(cs))
			for _, c := range cs {
				vs = append(vs, view{ID: c.ID, Label: c.Label, CreatedAt: &c.CreatedAt})
			}
			o.Print(vs, func(w io.Writer) {
				if len(vs) == 0 {
					fmt.Fprintln(w, "no controllers: trust a program with "+o.Cmd("controllers add --label LABEL"))
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tLABEL\tCREATED")
				for _, v := range vs {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", v.ID, v.Label, v.CreatedAt.Local().Format("2006-01-02 15:04"))
				}
				tw.Flush()
			})
			return nil
		})
	remove := a.verb(&cobra.Command{Use: "remove ID", Short: "remove a grant (ID: as list shows it, or a unique start of it)", Args: cli.Nargs(1, 1),
		Example: "  gateway controllers remove c_1a2b"}, false, func(o *cli.IO, args []string) error {
		st, err := store(o)
		if err != nil {
			return err
		}
		cs, err := st.List()
		if err != nil {
			return err
		}
		ids := make([]string, len(cs))
		for i, c := range cs {
			ids[i] = c.ID
		}
		id, ok, err := cli.Resolve(args[0], ids)
		if err == nil && ok {
			var c qwen.Controller
			if c, ok, err = st.Remove(id); err == nil && ok {
				o.Print(view{ID: c.ID, Label: c.Label}, func(w io.Writer) { fmt.Fprintf(w, "removed %s (%s)\n", c.ID, c.Label) })
			}
		}
		if err == nil && !ok {
			err = &cli.Error{Exit: exitError, Code: cli.CodeNotFound, Err: fmt.Errorf("no controller %q (see %s)", args[0], o.Cmd("controllers list"))}
		}
		return err
	})
	return group(c, add, list, remove)
}
