package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sessiongateway/gateway/internal/away"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
	"github.com/sessiongateway/gateway/router"
)

// Both local legs count the drop and hold notices they lose; the router
// finds that through an optional interface, so a rename would silently
// take gateway_notices_lost_total away.
var (
	_ router.NoticeCounter = (*claude.Leg)(nil)
	_ router.NoticeCounter = (*qwen.Leg)(nil)
)

// startLegs registers the gateway on every enabled local leg it can. A leg
// that cannot register is logged and left out (README.md: "It registers on
// every local leg it can"), so a broken ~/.qwen does not keep Claude Code sessions
// from the gateway; it is an error only when no leg at all would serve
// (others counts the legs built elsewhere, the remote one). The socket files
// an earlier run left behind (see uds.SocketLedger) are swept first.
func startLegs(log *slog.Logger, c serveConfig, metrics *observability.Metrics, others int) ([]leg.Leg, *claude.AliasPool, error) {
	var legs []leg.Leg
	var pool *claude.AliasPool
	var failed []error
	var sockets []string
	ledger := uds.SocketLedger(filepath.Join(c.stateDir, "sockets"))
	if swept, err := ledger.Sweep(); err != nil {
		log.Warn("stale sockets of an earlier run not swept", "err", err)
	} else if len(swept) > 0 {
		log.Info("stale sockets of an earlier run removed", "paths", swept)
	}
	counted := func(leg message.Protocol) func(message.Status) {
		return func(st message.Status) { metrics.Receipt(context.Background(), string(leg), "out", st.String()) }
	}
	// Qwen registers first so the processes the Claude leg starts (alias
	// workers) get the Qwen inbox's child token: processes the gateway starts
	// are its own, as Qwen Code's child token says
	// (docs/protocols/qwen-cross-session.md#auth-line). The leg order stays
	// Claude, then Qwen.
	var qwenLeg leg.Leg
	var childEnv []string
	if !c.noQwen {
		peer, err := startQwen(log, c, counted(message.ProtocolQwen))
		if err != nil {
			log.Error("not registered as a Qwen Code peer; serving without that leg", "err", err)
			failed = append(failed, fmt.Errorf("registering as a Qwen Code peer: %w", err))
		} else {
			qwenLeg, childEnv = peer, peer.ChildEnv()
			sockets = append(sockets, peer.SocketPath())
		}
	}
	if !c.noClaude {
		peer, p, err := startClaude(log, c, childEnv, counted(message.ProtocolClaude))
		if err != nil {
			log.Error("not registered as a Claude Code peer; serving without that leg", "err", err)
			failed = append(failed, fmt.Errorf("registering as a Claude Code peer: %w", err))
		} else {
			legs, pool = append(legs, peer), p
			sockets = append(sockets, peer.SocketPath())
		}
	}
	if qwenLeg != nil {
		legs = append(legs, qwenLeg)
	}
	if len(legs)+others == 0 && len(failed) > 0 {
		return nil, nil, errors.Join(failed...)
	}
	// A kill -9 leaves these files behind; the next start sweeps them.
	if err := ledger.Record(sockets...); err != nil {
		log.Warn("socket ledger not written: a kill -9 would leave stale sockets", "err", err)
	}
	return legs, pool, nil
}

func startClaude(log *slog.Logger, c serveConfig, childEnv []string, receiptSent func(message.Status)) (*claude.Leg, *claude.AliasPool, error) {
	cfgDir := c.getenv("CLAUDE_CONFIG_DIR")
	if cfgDir == "" {
		d, err := claude.ConfigDir()
		if err != nil {
			return nil, nil, err
		}
		cfgDir = d
	}
	peer, err := claude.Register(claude.Config{
		Name: c.name, ConfigDir: cfgDir, RuntimeDir: c.getenv("XDG_RUNTIME_DIR"),
		Version: version, Mode: c.mode, Inbound: c.inbound, RequireAuth: c.requireAuth,
		Settle: c.settle, Logger: log, UploadsDir: filepath.Join(c.stateDir, "uploads"),
		UploadsQuota: c.files.uploadsQuotaBytes(), UploadsMaxAge: c.files.uploadsMaxAge(),
		ReceiptSent: receiptSent,
		Hooks:       claude.HookOptions{Socket: filepath.Join(c.stateDir, "hooks.sock"), Wait: c.localPromptWait, Away: awaySwitch(c.away)},
	})
	if err != nil {
		return nil, nil, err
	}
	if !c.bridge || (c.noQwen && (c.remote == nil || !c.remote.enabled())) {
		return peer, nil, nil
	}
	exe, err := os.Executable()
	if err != nil {
		deregister(peer)
		return nil, nil, fmt.Errorf("alias workers need the gateway's own path: %w", err)
	}
	env := append(os.Environ(), "CLAUDE_CONFIG_DIR="+cfgDir, "XDG_RUNTIME_DIR="+c.getenv("XDG_RUNTIME_DIR"))
	env = append(env, childEnv...) // the Qwen inbox and its child token; later entries win over inherited ones
	format := c.logFormat.Resolve(os.Stderr)
	env = append(env, "GATEWAY_LOG_FORMAT="+format.String()) // one format in serve's log
	env = append(env, c.workerEnv...)
	pool := claude.NewAliasPool(claude.PoolConfig{
		Command: func(name string) *exec.Cmd {
			args := []string{"alias-worker", "--name", name, "--mode", c.mode.String()}
			if c.requireAuth { // an alias is a door into the gateway too
				args = append(args, "--require-auth")
			}
			cmd := exec.Command(exe, args...)
			cmd.Env = env
			cmd.Stderr = os.Stderr
			// Its own process group: the terminal's Ctrl-C or hang-up reaches
			// only serve, which drains the pool in order.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			return cmd
		},
		Events:     peer.OnAliasEvent,
		IdleAfter:  10 * time.Minute, // for aliases started on demand; published ones live as long as their session
		MaxWorkers: c.maxAliases,
		Logger:     log,
	})
	peer.EnableAliases(pool)
	return peer, pool, nil
}

func startQwen(log *slog.Logger, c serveConfig, receiptSent func(message.Status)) (*qwen.Leg, error) {
	home, _ := os.UserHomeDir()
	if h := c.getenv("HOME"); h != "" {
		home = h
	}
	cwd, _ := os.Getwd()
	tmp := qwen.NodeTmpDir(c.getenv)
	qhome := qwen.HomeDir(c.getenv("QWEN_HOME"), home, cwd, tmp)
	return qwen.Register(qwen.Config{
		Name: c.name, Home: qhome, RuntimeDir: c.getenv("XDG_RUNTIME_DIR"), TmpDir: tmp,
		Mode: c.mode, Inbound: c.qwenInbound, HeldExpiry: c.heldExpiry, Logger: log,
		Controllers: []qwen.ControllerVerifier{
			qwen.NewControllers(controllersPath(c.stateDir), clock.Real{}),
			qwen.NewControllers(qwen.ControllersFile(qhome), clock.Real{}),
		},
		ReceiptSent: receiptSent,
	})
}

// deregister takes down a leg that registered but will not run: running it
// with a cancelled context removes its files.
func deregister(legs ...leg.Leg) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, l := range legs {
		_ = l.Run(ctx, make(chan message.Event, 64))
	}
}

func controllersPath(stateDir string) string { return filepath.Join(stateDir, "controllers.json") }

// awaySwitch is the away switch as the Claude leg reads it; nil (a test's
// config) is never away.
func awaySwitch(s *away.State) claude.Away {
	if s == nil {
		return nil
	}
	return s
}
