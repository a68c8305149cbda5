package main

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/cli"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/leg/remote"
	"github.com/sessiongateway/gateway/message"
)

// durableRemote wraps the remote leg with the outbox in
// <state-dir>/outbox.db, so a message for a remote session is on disk
// before anyone is told it was accepted. The returned func closes the
// file; call it after the leg's Run has returned.
func durableRemote(log *slog.Logger, stateDir string, inner leg.Leg) (*outbox.Leg, func(), error) {
	st, err := outbox.Open(filepath.Join(stateDir, outbox.FileName), outbox.Options{Logger: log})
	if err != nil {
		return nil, nil, err
	}
	leg, err := outbox.New(inner, outbox.Config{Store: st, Logger: log.With("leg", "remote"),
		Permanent: remote.IsRefusal, EventUUID: remote.EventUUID})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return leg, func() { st.Close() }, nil
}

func (a *app) outboxCmd() *cobra.Command {
	var all bool
	c := &cobra.Command{Use: "outbox", Short: "list messages waiting for a remote server's acknowledgement", Args: cli.Nargs(0, 0),
		Example: "  gateway outbox\n  gateway outbox --all --json"}
	c.Flags().BoolVar(&all, "all", false, "include recently acknowledged and failed messages")
	return a.verb(c, true, func(o *cli.IO, _ []string) error {
		items, err := o.Client().Outbox(a.ctx, all)
		if err != nil {
			return err
		}
		if items == nil {
			items = []message.OutboxItem{}
		}
		o.Print(items, func(w io.Writer) {
			if len(items) == 0 {
				fmt.Fprintln(w, "the outbox is empty: every message for a remote session has been acknowledged")
				return
			}
			cli.WriteOutbox(w, items, time.Now())
		})
		return nil
	})
}
