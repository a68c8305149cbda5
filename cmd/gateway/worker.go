package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
	"github.com/sessiongateway/gateway/transport/uds/claude"
)

// runAliasWorker is the hidden subcommand the gateway starts for each
// Claude-side alias: one process, one registered name (see claude.AliasPool).
// Its control pipe is fd 3; it exits when that closes.
func runAliasWorker(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "alias-worker")
	name := fs.String("name", "", "alias name to register")
	mode := fs.String("mode", "prompting", "review class: bypass or prompting")
	logLevel := fs.String("log-level", "info", "log level")
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	m, err := message.ParseMode(*mode)
	if err != nil || *name == "" {
		fmt.Fprintln(e.stderr, "usage: gateway alias-worker --name N [--mode M] (started by gateway serve)")
		return exitUsage
	}
	ctl := os.NewFile(claude.WorkerFD, "alias-ctl")
	if ctl == nil {
		fmt.Fprintln(e.stderr, "gateway alias-worker: no control pipe on fd 3")
		return exitUsage
	}
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(*logLevel))
	log := observability.NewLogger(e.stderr, lvl).With("alias", *name)
	cfgDir := e.getenv("CLAUDE_CONFIG_DIR")
	if cfgDir == "" {
		if cfgDir, err = claude.ConfigDir(); err != nil {
			return fail(e, err)
		}
	}
	err = claude.RunWorker(ctx, claude.Config{
		Name: *name, ConfigDir: cfgDir, RuntimeDir: e.getenv("XDG_RUNTIME_DIR"), Version: version,
		Mode: m, Inbound: claude.PolicyAccept, Logger: log, Kind: claude.KindAlias,
		SpoolDir: filepath.Join(cfgDir, "file-transfers"),
	}, ctl)
	if err != nil {
		log.Error("alias worker stopped", "err", err)
		return exitError
	}
	return exitOK
}
