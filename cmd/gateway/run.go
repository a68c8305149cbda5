package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/sessiongateway/gateway/internal/away"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/approver"
	"github.com/sessiongateway/gateway/console"
	"github.com/sessiongateway/gateway/idempotency"
	"github.com/sessiongateway/gateway/internal/debugserver"
	"github.com/sessiongateway/gateway/internal/lifecycle"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/claudebg"
	mcpleg "github.com/sessiongateway/gateway/leg/mcp"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/mcp"
	"github.com/sessiongateway/gateway/observability"
	"github.com/sessiongateway/gateway/router"
)

func serve(ctx context.Context, log *slog.Logger, c serveConfig) error {
	if err := safefile.UsableDir(c.stateDir); err != nil {
		return stateDirError(err)
	}
	if err := safefile.EnsureDir(c.stateDir); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	unlock, err := lockStateDir(c.stateDir)
	if err != nil {
		return err
	}
	defer unlock()
	tln, err := api.ListenTCP(c.apiAddr) // before registering anywhere: a taken port stops the start
	if err != nil {
		return err
	}
	if tln != nil {
		defer tln.Close() // the servers close it once they run; this is for a failed start
	}
	token, err := api.DefaultToken(c.stateDir)
	if err != nil {
		return err
	}
	life := c.life
	if life == nil {
		life = &lifecycleOpts{grace: defaultGrace}
	}
	log, level := observability.Leveled(log)
	tel, err := observability.NewTelemetry(ctx, observability.TelemetryConfig{Getenv: c.getenv, Version: version})
	if err != nil {
		return err
	}
	defer func() {
		// Bounded: an unreachable OTLP collector must not hold up the exit.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = tel.Shutdown(sctx)
	}()
	if len(tel.OTLP) > 0 {
		log.Info("exporting telemetry over OTLP", "signals", tel.OTLP)
	}
	metrics := tel.Metrics
	var outboxDepth func() int
	var keys api.KeyStore // idempotency keys: in the outbox's file when there is one

	// The remote leg is built first: building it has no side effects, so a
	// bad credential stops the gateway before it registers anywhere.
	var remoteLeg leg.Leg
	if c.remote != nil && c.remote.enabled() {
		l, err := newRemoteLeg(log, c.remote)
		if err != nil {
			return fmt.Errorf("remote leg: %w", err)
		}
		// A message for a remote session is on disk before it is accepted.
		ob, closeOutbox, err := durableRemote(log, c.stateDir, l)
		if err != nil {
			return err
		}
		defer closeOutbox()
		remoteLeg = ob
		keys = idempotency.NewStore(ob.Store())
		outboxDepth = ob.Depth
	}
	others := 0
	if remoteLeg != nil {
		others = 1
	}
	fed, err := c.fed.Join(ctx, c.stateDir, log) // before registering anywhere: a clash stops the start
	if err != nil {
		return err
	}
	// The away switch is the user's word, kept across restarts; one we
	// cannot read stops the start rather than be guessed.
	if c.away, err = away.Open(filepath.Join(c.stateDir, "away.json")); err != nil {
		return errors.Join(err, fed.Close())
	}
	legs, pool, err := startLegs(log, c, metrics, others)
	if err != nil {
		return errors.Join(err, fed.Close())
	}
	if fed != nil {
		defer fed.Close()
		fed.Instrument(metrics)
		legs = append(legs, fed.Leg())
	}
	if remoteLeg != nil {
		legs = append(legs, remoteLeg)
	}
	mcpLeg := mcpleg.NewLeg(nil)
	legs = append(legs, mcpLeg)
	if hl, err := c.hosted.Leg(c.stateDir, log); err != nil {
		deregister(legs...)
		return errors.Join(err, fed.Close())
	} else if hl != nil {
		legs = append(legs, hl)
	}
	if !c.noClaude { // Claude Code's background agents: there only when its daemon runs
		if bg, err := claudebg.New(claudebg.Config{ConfigDir: c.getenv("CLAUDE_CONFIG_DIR"), Logger: log}); err != nil {
			log.Warn("Claude Code's background agents not followed", "err", err)
		} else {
			legs = append(legs, bg)
		}
	}
	var closePool func() // once serving, before the router stops: what the workers accepted is still forwarded
	if pool != nil {
		defer pool.Close()
		closePool = pool.Close
	}
	rt := router.New(router.Config{Logger: log, Metrics: metrics, Tracer: tel.Tracer(), Bridge: c.bridge, BridgeOnly: c.bridgeOnly, DID: c.did, Host: fed.Host(), Away: c.away,
		// What the gateway itself sends (approver notices) attests its own
		// review class, so a receiver of that class admits it.
		DefaultMode: c.mode}, legs...)
	defer approver.Start(ctx, log, rt, c.approver)()
	if fed != nil {
		go func() { _ = fed.ServeRouter(ctx, rt) }()
	}
	gauges := rt.Gauges()
	gauges.OutboxDepth = outboxDepth
	metrics.Observe(gauges)
	mcpSrv := mcp.New(mcp.Config{Router: rt, Leg: mcpLeg, Logger: log, Version: version,
		Drop: func(reason string) { metrics.Drop(ctx, "mcp", reason) }})
	defer mcpSrv.Close()
	notes := c.notify.Start(ctx, log, rt)
	defer notes.Stop()
	srv, err := newAPIServer(c, api.Config{Router: rt, Logger: log, Metrics: metrics.Handler(), Version: version, Actions: notes.Actions(),
		Token: token, AllowedHosts: c.hosts, Keys: keys, Federation: fed.StatusFunc(), MCP: mcpSrv.Handler(), Console: console.Handler(),
		Drop: func(reason string) { metrics.Drop(ctx, "api", reason) }})
	notes.LinkBase(srv.ConsoleURL)
	metrics.ObserveNotifications(notes.Counts)

	sockPath := filepath.Join(c.stateDir, "gateway.sock")
	var uln net.Listener
	if err == nil {
		uln, err = listenControl(sockPath)
	}
	if err != nil {
		deregister(legs...) // registered but not yet run
		return err
	}
	unixSrv := api.NewHTTPServer(srv.Handler())
	unixSrv.ConnContext = uidCheck
	servers := []*http.Server{unixSrv}
	listeners := []net.Listener{uln}
	if tln != nil {
		tln = srv.WithTLS(tln)
		servers = append(servers, api.NewHTTPServer(srv.TCPHandler(tln.Addr().String())))
		listeners = append(listeners, tln)
		log.Info("control API on TCP", "addr", tln.Addr().String(), "tls", srv.TLSConfig() != nil)
	}
	if c.debugAddr != "" {
		dln, err := debugserver.Listen(c.debugAddr)
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			deregister(legs...)
			return err
		}
		servers, listeners = append(servers, debugserver.NewServer()), append(listeners, dln)
	}
	log.Info("gateway serving", "state_dir", c.stateDir, "control_socket", sockPath, "version", version)

	err = lifecycle.Run(ctx, lifecycle.Parts{Log: log, Grace: life.grace, Core: rt.Run,
		Servers: servers, Listeners: listeners, Pending: outboxDepth, BeforeCore: closePool, Reloaders: life.reloaders(level, srv),
		Notify: lifecycle.SystemdNotify(c.getenv("NOTIFY_SOCKET")), Ready: c.ready(legs, sockPath, srv.ConsoleURL()),
		// An event stream never finishes by itself: end it now, with a reason.
		EndStreams: func() { rt.Hub().CloseAll(router.ErrShuttingDown); mcpSrv.Close() }})
	log.Info("gateway stopped")
	return err
}

// ready is the start-up summary for a terminal, nil for none.
func (c serveConfig) ready(legs []leg.Leg, sock, url string) func() {
	s := observability.Summary{Name: c.name, Socket: sock, APIURL: url, Version: version, StateDir: c.stateDir, DefaultStateDir: defaultStateDir(c.getenv)}
	for _, l := range legs {
		s.Legs = append(s.Legs, string(l.Name()))
	}
	return func() { _ = s.Write(c.summary) }
}

// uidCheck closes control-socket connections from other users: the socket is
// 0600 already, this holds even if its directory was loosened.
func uidCheck(ctx context.Context, c net.Conn) context.Context {
	if uc, ok := c.(*net.UnixConn); ok {
		if cred, err := uds.PeerCred(uc); err != nil || (cred.UID != os.Geteuid() && cred.UID != 0) {
			c.Close()
		}
	}
	return ctx
}

// listenControl binds the control socket like every socket of ours: in the
// checked 0700 state directory, 0600, replacing only a stale file, and
// removed on close only if it is still ours.
func listenControl(path string) (net.Listener, error) {
	ln, err := uds.Listen(path, uds.Limits{})
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

// lockStateDir holds an exclusive lock so two gateways never share a state
// directory.
func lockStateDir(dir string) (func(), error) {
	unlock, err := safefile.TryLock(filepath.Join(dir, "gateway.lock"))
	switch {
	case errors.Is(err, safefile.ErrLocked):
		return nil, fmt.Errorf("another gateway is running with state directory %s: stop it, or give this one another --state-dir", dir)
	case err != nil:
		return nil, fmt.Errorf("lock file: %w", err)
	}
	return unlock, nil
}
