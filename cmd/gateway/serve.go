package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/internal/settings"

	"github.com/sessiongateway/gateway/internal/safefile"

	"github.com/sessiongateway/gateway/internal/clock"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/approver"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/transport/uds"
	"github.com/sessiongateway/gateway/transport/uds/claude"
	"github.com/sessiongateway/gateway/transport/uds/qwen"
)

func runServe(ctx context.Context, e *env, args []string) int {
	plan, code := setupServe(e, "serve", args, nil)
	if plan == nil {
		return code
	}
	log := observability.NewLogger(e.stderr, plan.logLevel)
	if err := serve(ctx, log, plan.cfg); err != nil {
		log.Error("gateway stopped", "err", err)
		return exitError
	}
	return exitOK
}

// servePlan is serve's checked configuration: what serve runs, and what
// `gateway config` prints.
type servePlan struct {
	cfg      serveConfig
	logLevel slog.Level
	settings *settings.Settings
}

// setupServe registers serve's flags (and the command's own, via extra),
// fills them from every configuration layer and checks the result. It
// starts nothing; on a bad configuration it prints why and returns nil with
// the exit code. A new serve flag is one xxxFlags(fs, e) call line here: the
// configuration layer finds it with fs.VisitAll.
func setupServe(e *env, cmd string, args []string, extra func(*flag.FlagSet)) (*servePlan, int) {
	fs := newFlags(e, cmd)
	fs.Usage = serveUsage(fs, cmd)
	configFlag(fs)
	sd := stateDirFlag(fs, e)
	name := fs.String("name", "gateway", "name to register under on the local legs")
	apiAddr := fs.String("api", "", "also serve the control API on this TCP address: bearer tokens (<state-dir>/api-token, or scoped ones from `gateway tokens`), Host allowlist (--allow-host), TLS with --tls-cert/--tls-key off loopback")
	var hosts multi
	fs.Var(&hosts, "allow-host", "extra Host header value accepted on --api (repeatable)")
	mode := fs.String("mode", "prompting", "the gateway's own review class for inbound mode parity: bypass or prompting")
	inbound := fs.String("inbound", "", "inbound policy: accept, hold or refuse (default: mode parity)")
	requireAuth := fs.Bool("require-auth", false, "refuse inbound connections without the right token")
	settle := fs.Duration("settle", 2*time.Second, "how long a Claude send waits for a held/dropped receipt before it counts as delivered")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	legs := fs.String("legs", "claude,qwen", "local legs to run, comma-separated: claude, qwen")
	bridge := fs.Bool("bridge", true, "publish each local leg's sessions on the other (Claude Code <-> Qwen Code) and forward between them")
	var bridgeOnly multi
	fs.Var(&bridgeOnly, "bridge-only", "limit the bridge to sessions whose name matches this glob (repeatable)")
	heldExpiry := fs.String("held-expiry", "5m", "how long the Qwen inbox holds a message: 1m, 5m, 10m or never")
	remote := remoteFlags(fs, e)
	didFile := didFileFlag(fs, e)
	life := lifecycleFlags(fs, e)
	apiHard := apiFlags(fs, e)
	approver := fs.String("approver", "", "address of a local session (or alias) that gets each remote permission prompt as a message and answers it by replying allow, deny or answer (env GATEWAY_APPROVER)")
	own := settings.OwnFlags(fs, extra)
	st, _, err := loadSettings(fs, e, args, own...)
	if err != nil {
		var pe *settings.ParseError
		if errors.As(err, &pe) {
			return nil, flagErr(err) // the flag package has said why
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(e.stderr, "gateway: %s\n", line)
		}
		return nil, exitUsage
	}
	// A check names the flag; annotate adds the file line or variable it came from.
	fail := func(format string, a ...any) (*servePlan, int) {
		fmt.Fprintf(e.stderr, "gateway: %s\n", st.Annotate(fmt.Sprintf(format, a...)))
		return nil, exitUsage
	}
	if err := remote.check(); err != nil {
		return fail("%v", err)
	}
	if err := apiHard.check(*apiAddr); err != nil {
		return fail("%v", err) // also caught by `gateway config`
	}
	did, err := openDIDFile(*didFile)
	if err != nil {
		return fail("--did-file: %v", err)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail("--log-level %q: want debug, info, warn or error", *logLevel)
	}
	m, err := message.ParseMode(*mode)
	if err != nil || m == message.ModeUnknown {
		return fail("--mode %q: want bypass or prompting", *mode)
	}
	pol, err := claude.ParsePolicy(*inbound)
	if err != nil {
		return fail("--inbound: %v", err)
	}
	qpol, err := qwen.ParsePolicy(*inbound)
	if err != nil && *inbound != "parity" {
		return fail("--inbound: %v", err)
	}
	switch *heldExpiry {
	case "1m", "5m", "10m", "never":
	default:
		return fail("--held-expiry %q: want 1m, 5m, 10m or never", *heldExpiry)
	}
	enabled := map[string]bool{}
	for _, l := range strings.Split(*legs, ",") {
		switch l = strings.TrimSpace(l); l {
		case "claude", "qwen":
			enabled[l] = true
		case "remote":
			if !remote.enabled() {
				return fail("--legs remote needs credentials: --remote-token-file, --remote-session-key-file or --remote-claude-credentials")
			}
		case "", "none":
		default:
			return fail("--legs: unknown leg %q (want claude, qwen, remote)", l)
		}
	}
	for _, p := range bridgeOnly {
		if _, err := path.Match(p, ""); err != nil {
			return fail("--bridge-only %q: %v", p, err)
		}
	}
	if *approver != "" {
		if _, err := addressing.Parse(*approver); err != nil {
			return fail("--approver: %v", err)
		}
	}
	if len(enabled) == 0 && !remote.enabled() {
		return fail("--legs: name at least one leg, or give remote credentials")
	}
	return &servePlan{logLevel: lvl, settings: st, cfg: serveConfig{
		stateDir: *sd, name: *name, apiAddr: *apiAddr, hosts: hosts, mode: m, inbound: pol,
		qwenInbound: qpol, heldExpiry: qwen.ParseHeldExpiry(*heldExpiry), noClaude: !enabled["claude"], noQwen: !enabled["qwen"], bridge: *bridge, bridgeOnly: bridgeOnly,
		requireAuth: *requireAuth, settle: *settle, getenv: e.getenv, remote: remote, did: did, approver: *approver,
		life: life, api: apiHard,
	}}, 0
}

type serveConfig struct {
	stateDir    string
	name        string
	apiAddr     string
	hosts       []string
	mode        message.Mode
	inbound     claude.Policy
	qwenInbound qwen.Policy
	heldExpiry  time.Duration
	noClaude    bool
	noQwen      bool
	bridge      bool
	bridgeOnly  []string
	workerEnv   []string // extra environment for alias workers (tests)
	requireAuth bool
	settle      time.Duration
	getenv      func(string) string
	remote      *remoteOpts            // nil or without credentials: no remote leg
	did         addressing.DIDResolver // --did-file; nil refuses did: addresses
	approver    string                 // --approver: the session that answers remote prompts; "" for none
	life        *lifecycleOpts         // --grace and SIGHUP; nil takes the defaults
	api         *apiOpts               // TLS, CORS and rate limits of --api; nil takes the defaults
}

func serve(ctx context.Context, log *slog.Logger, c serveConfig) error {
	if err := safefile.EnsureDir(c.stateDir); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	unlock, err := lockStateDir(c.stateDir)
	if err != nil {
		return err
	}
	defer unlock()
	token, err := api.DefaultToken(c.stateDir)
	if err != nil {
		return err
	}
	life := c.life
	if life == nil {
		life = &lifecycleOpts{grace: defaultGrace}
	}
	log, level := leveled(log)
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

	// The remote leg is built first: building it has no side effects, so a
	// bad credential stops the gateway before it registers anywhere.
	var remoteLeg router.Leg
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
		outboxDepth = func() int { items, _ := ob.Outbox(false); return len(items) }
	}
	others := 0
	if remoteLeg != nil {
		others = 1
	}
	legs, pool, err := startLegs(log, c, metrics, others)
	if err != nil {
		return err
	}
	if remoteLeg != nil {
		legs = append(legs, remoteLeg)
	}
	if pool != nil {
		defer pool.Close()
	}
	rt := router.New(router.Config{Logger: log, Metrics: metrics, Tracer: tel.Tracer(), Bridge: c.bridge, BridgeOnly: c.bridgeOnly, DID: c.did,
		// What the gateway itself sends (approver notices) attests its own
		// review class, so a receiver of that class admits it.
		DefaultMode: c.mode}, legs...)
	defer startApprover(ctx, log, rt, c.approver)()
	gauges := rt.Gauges()
	gauges.OutboxDepth = outboxDepth
	metrics.Observe(gauges)
	srv, err := newAPIServer(c, api.Config{Router: rt, Logger: log, Metrics: metrics.Handler(), Version: version,
		Token: token, AllowedHosts: c.hosts})

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
	if c.apiAddr != "" {
		tln, err := listenAPI(c.apiAddr, srv)
		if err != nil {
			uln.Close()
			deregister(legs...)
			return err
		}
		servers = append(servers, api.NewHTTPServer(srv.TCPHandler(tln.Addr().String())))
		listeners = append(listeners, tln)
		log.Info("control API on TCP", "addr", tln.Addr().String(), "tls", srv.TLSConfig() != nil)
	}
	log.Info("gateway serving", "state_dir", c.stateDir, "control_socket", sockPath, "version", version)

	err = runUntilStopped(ctx, log, life.grace, rt, servers, listeners, outboxDepth, life.reloaders(level, srv))
	log.Info("gateway stopped")
	return err
}

// startApprover runs the approver for addr beside the router, when addr is
// set, until the returned stop is called. It is built before the router
// runs, so it sees every prompt, and like the router it outlives the stop
// signal: notices and replies under way finish while the API drains.
func startApprover(ctx context.Context, log *slog.Logger, rt *router.Router, addr string) (stop func()) {
	if addr == "" {
		return func() {}
	}
	a := approver.New(rt, approver.Config{Address: addr, Logger: log})
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.Run(ctx)
	}()
	return func() { cancel(); <-done }
}

// startLegs registers the gateway on every enabled local leg it can. A leg
// that cannot register is logged and left out (DESIGN: "registers on every
// local leg it can"), so a broken ~/.qwen does not keep Claude Code sessions
// from the gateway; it is an error only when no leg at all would serve
// (others counts the legs built elsewhere, the remote one).
func startLegs(log *slog.Logger, c serveConfig, metrics *observability.Metrics, others int) ([]router.Leg, *claude.AliasPool, error) {
	var legs []router.Leg
	var pool *claude.AliasPool
	var failed []error
	counted := func(leg message.Protocol) func(message.Status) {
		return func(st message.Status) { metrics.Receipt(context.Background(), string(leg), "out", st.String()) }
	}
	// Qwen registers first so the processes the Claude leg starts (alias
	// workers) get the Qwen inbox's child token: processes the gateway starts
	// are its own, as the spec's child token says. The leg order stays
	// Claude, then Qwen.
	var qwenLeg router.Leg
	var childEnv []string
	if !c.noQwen {
		peer, err := startQwen(log, c, counted(message.ProtocolQwen))
		if err != nil {
			log.Error("not registered as a Qwen Code peer; serving without that leg", "err", err)
			failed = append(failed, fmt.Errorf("registering as a Qwen Code peer: %w", err))
		} else {
			qwenLeg, childEnv = peer, peer.ChildEnv()
		}
	}
	if !c.noClaude {
		peer, p, err := startClaude(log, c, childEnv, counted(message.ProtocolClaude))
		if err != nil {
			log.Error("not registered as a Claude Code peer; serving without that leg", "err", err)
			failed = append(failed, fmt.Errorf("registering as a Claude Code peer: %w", err))
		} else {
			legs, pool = append(legs, peer), p
		}
	}
	if qwenLeg != nil {
		legs = append(legs, qwenLeg)
	}
	if len(legs)+others == 0 && len(failed) > 0 {
		return nil, nil, errors.Join(failed...)
	}
	return legs, pool, nil
}

func startClaude(log *slog.Logger, c serveConfig, childEnv []string, receiptSent func(message.Status)) (*claude.Peer, *claude.AliasPool, error) {
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
		ReceiptSent: receiptSent,
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
	env = append(env, c.workerEnv...)
	pool := claude.NewAliasPool(claude.PoolConfig{
		Command: func(name string) *exec.Cmd {
			cmd := exec.Command(exe, "alias-worker", "--name", name, "--mode", c.mode.String())
			cmd.Env = env
			cmd.Stderr = os.Stderr
			return cmd
		},
		Events:    peer.OnAliasEvent,
		IdleAfter: 10 * time.Minute, // for aliases started on demand; published ones live as long as their session
		Logger:    log,
	})
	peer.EnableAliases(pool)
	return peer, pool, nil
}

func startQwen(log *slog.Logger, c serveConfig, receiptSent func(message.Status)) (*qwen.Peer, error) {
	home, _ := os.UserHomeDir()
	if h := c.getenv("HOME"); h != "" {
		home = h
	}
	cwd, _ := os.Getwd()
	tmp := qwen.NodeTmpDir(c.getenv)
	qhome := qwen.HomeDir(c.getenv("QWEN_HOME"), home, cwd, tmp)
	return qwen.Register(qwen.PeerConfig{
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
func deregister(legs ...router.Leg) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, l := range legs {
		_ = l.Run(ctx, make(chan message.Event, 64))
	}
}

func controllersPath(stateDir string) string { return filepath.Join(stateDir, "controllers.json") }

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
		return nil, fmt.Errorf("another gateway is running with state directory %s", dir)
	case err != nil:
		return nil, fmt.Errorf("lock file: %w", err)
	}
	return unlock, nil
}
