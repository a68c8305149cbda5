package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/sessiongateway/gateway/outbox"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/transport/remote"
)

// durableRemote wraps the remote leg with the outbox in
// <state-dir>/outbox.db, so a message for a remote session is on disk
// before anyone is told it was accepted. The returned func closes the
// file; call it after the leg's Run has returned.
func durableRemote(log *slog.Logger, stateDir string, inner router.Leg) (*outbox.Leg, func(), error) {
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

func runOutbox(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "outbox")
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print a JSON array")
	all := fs.Bool("all", false, "include recently acknowledged and failed messages")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 0 {
		fmt.Fprintln(e.stderr, "usage: gateway outbox [--all] [--json]")
		return exitUsage
	}
	items, err := clientFor(*sd).Outbox(ctx, *all)
	if err != nil {
		return fail(e, err)
	}
	if *asJSON {
		if items == nil {
			items = []outbox.Item{}
		}
		printJSON(e.stdout, items)
		return exitOK
	}
	outbox.WriteTable(e.stdout, items, time.Now())
	return exitOK
}
