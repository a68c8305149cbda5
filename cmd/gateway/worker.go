package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/cli"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
)

// aliasWorkerCmd is the hidden subcommand the gateway starts for each
// Claude-side alias: one process, one registered name (see claude.AliasPool).
// Its control pipe is fd 3; it exits when that closes.
func (a *app) aliasWorkerCmd() *cobra.Command {
	var name, mode, logLevel string
	var requireAuth bool
	c := &cobra.Command{Use: "alias-worker --name NAME", Short: "started by gateway serve", Hidden: true, Args: cli.Nargs(0, 0)}
	c.Flags().StringVar(&name, "name", "", "alias name to register")
	c.Flags().StringVar(&mode, "mode", "prompting", "review class: bypass or prompting")
	c.Flags().StringVar(&logLevel, "log-level", "info", "log level")
	c.Flags().BoolVar(&requireAuth, "require-auth", false, "refuse unauthenticated messages (serve's --require-auth)")
	return a.verb(c, false, func(o *cli.IO, _ []string) error { return aliasWorker(a.ctx, a.e, name, mode, logLevel, requireAuth) })
}

func aliasWorker(ctx context.Context, e *env, name, mode, logLevel string, requireAuth bool) error {
	m, err := message.ParseMode(mode)
	if err != nil || name == "" {
		return cli.Usagef("alias-worker needs --name and a mode (started by gateway serve)")
	}
	ctl := os.NewFile(claude.WorkerFD, "alias-ctl")
	if ctl == nil {
		return cli.Usagef("alias-worker: no control pipe on fd 3")
	}
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(logLevel))
	format := observability.LogAuto // serve's stderr is ours: auto picks as serve did
	_ = format.Set(e.getenv("GATEWAY_LOG_FORMAT"))
	log := observability.NewFormatLogger(e.stderr, lvl, format).With("alias", name)
	cfgDir := e.getenv("CLAUDE_CONFIG_DIR")
	if cfgDir == "" {
		if cfgDir, err = claude.ConfigDir(); err != nil {
			return err
		}
	}
	err = claude.RunWorker(ctx, claude.Config{
		Name: name, ConfigDir: cfgDir, RuntimeDir: e.getenv("XDG_RUNTIME_DIR"), Version: version,
		Mode: m, Inbound: claude.PolicyAccept, RequireAuth: requireAuth, Logger: log, Kind: claude.KindAlias,
		SpoolDir: filepath.Join(cfgDir, "file-transfers"),
	}, ctl)
	if err != nil {
		log.Error("alias worker stopped", "err", err)
		return cli.Exit(exitError)
	}
	return nil
}
