package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/transport/uds"
	"github.com/sessiongateway/gateway/transport/uds/claude"
	"github.com/sessiongateway/gateway/transport/uds/qwen"
)

func runServe(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "serve")
	sd := stateDirFlag(fs, e)
	name := fs.String("name", "gateway", "name to register under on the local legs")
	apiAddr := fs.String("api", "", "also serve the control API on this loopback TCP address (bearer token from <state-dir>/api-token)")
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
	approver := fs.String("approver", e.getenv("GATEWAY_APPROVER"), "address of a local session (or alias) that gets each remote permission prompt as a message and answers it by replying allow, deny or answer (env GATEWAY_APPROVER)")
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	if err := remote.check(); err != nil {
		fmt.Fprintf(e.stderr, "gateway: %v\n", err)
		return exitUsage
	}
	did, err := openDIDFile(*didFile)
	if err != nil {
		fmt.Fprintf(e.stderr, "gateway: --did-file: %v\n", err)
		return exitUsage
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(e.stderr, "gateway: --log-level %q: want debug, info, warn or error\n", *logLevel)
		return exitUsage
	}
	m, err := message.ParseMode(*mode)
	if err != nil || m == message.ModeUnknown {
		fmt.Fprintf(e.stderr, "gateway: --mode %q: want bypass or prompting\n", *mode)
		return exitUsage
	}
	pol, err := claude.ParsePolicy(*inbound)
	if err != nil {
		fmt.Fprintf(e.stderr, "gateway: --inbound: %v\n", err)
		return exitUsage
	}
	qpol, err := qwen.ParsePolicy(*inbound)
	if err != nil && *inbound != "parity" {
		fmt.Fprintf(e.stderr, "gateway: --inbound: %v\n", err)
		return exitUsage
	}
	switch *heldExpiry {
	case "1m", "5m", "10m", "never":
	default:
		fmt.Fprintf(e.stderr, "gateway: --held-expiry %q: want 1m, 5m, 10m or never\n", *heldExpiry)
		return exitUsage
	}
	enabled := map[string]bool{}
	for _, l := range strings.Split(*legs, ",") {
		switch l = strings.TrimSpace(l); l {
		case "claude", "qwen":
			enabled[l] = true
		case "remote":
			if !remote.enabled() {
				fmt.Fprintln(e.stderr, "gateway: --legs remote needs credentials: --remote-token-file, --remote-session-key-file or --remote-claude-credentials")
				return exitUsage
			}
		case "", "none":
		default:
			fmt.Fprintf(e.stderr, "gateway: --legs: unknown leg %q (want claude, qwen, remote)\n", l)
			return exitUsage
		}
	}
	for _, p := range bridgeOnly {
		if _, err := path.Match(p, ""); err != nil {
			fmt.Fprintf(e.stderr, "gateway: --bridge-only %q: %v\n", p, err)
			return exitUsage
		}
	}
	if *approver != "" {
		if _, err := addressing.Parse(*approver); err != nil {
			fmt.Fprintf(e.stderr, "gateway: --approver: %v\n", err)
			return exitUsage
		}
	}
	if len(enabled) == 0 && !remote.enabled() {
		fmt.Fprintln(e.stderr, "gateway: --legs: name at least one leg, or give remote credentials")
		return exitUsage
	}
	log := observability.NewLogger(e.stderr, lvl)
	err = serve(ctx, log, serveConfig{
		stateDir: *sd, name: *name, apiAddr: *apiAddr, hosts: hosts, mode: m, inbound: pol,
		qwenInbound: qpol, heldExpiry: qwen.ParseHeldExpiry(*heldExpiry), noClaude: !enabled["claude"], noQwen: !enabled["qwen"], bridge: *bridge, bridgeOnly: bridgeOnly,
		requireAuth: *requireAuth, settle: *settle, getenv: e.getenv, remote: remote, did: did, approver: *approver,
	})
	if err != nil {
		log.Error("gateway stopped", "err", err)
		return exitError
	}
	return exitOK
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
	approver    string                 // router.Config.Approver
}

func serve(ctx context.Context, log *slog.Logger, c serveConfig) error {
	if err := uds.EnsureDir(c.stateDir); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	unlock, err := lockStateDir(c.stateDir)
	if err != nil {
		return err
	}
	defer unlock()
	token, err := apiToken(c.stateDir)
	if err != nil {
		return err
	}
	metrics, err := observability.NewMetrics()
	if err != nil {
		return err
	}
	defer metrics.Shutdown(context.Background())

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
	}
	legs, pool, err := startLegs(log, c)
	if err != nil {
		return err
	}
	if remoteLeg != nil {
		legs = append(legs, remoteLeg)
	}
	if pool != nil {
		defer pool.Close()
	}
	rt := router.New(router.Config{Logger: log, Metrics: metrics, Bridge: c.bridge, BridgeOnly: c.bridgeOnly, DID: c.did, Approver: c.approver,
		// What the gateway itself sends (approver notices) attests its own
		// review class, so a receiver of that class admits it.
		DefaultMode: c.mode}, legs...)
	srv := api.NewServer(api.Config{Router: rt, Logger: log, Metrics: metrics.Handler(), Version: version,
		Token: token, AllowedHosts: c.hosts})

	sockPath := filepath.Join(c.stateDir, "gateway.sock")
	uln, err := listenControl(sockPath)
	if err != nil {
		// The legs are registered but not yet run: take them down again.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		for _, l := range legs {
			_ = l.Run(cctx, make(chan message.Event, 64))
		}
		return err
	}
	servers := []*http.Server{{Handler: srv.Handler(), ConnContext: uidCheck, ReadHeaderTimeout: 10 * time.Second}}
	listeners := []net.Listener{uln}
	if c.apiAddr != "" {
		tln, err := net.Listen("tcp", c.apiAddr)
		if err != nil {
			uln.Close()
			return fmt.Errorf("--api %s: %w", c.apiAddr, err)
		}
		servers = append(servers, &http.Server{Handler: srv.TCPHandler(tln.Addr().String()), ReadHeaderTimeout: 10 * time.Second})
		listeners = append(listeners, tln)
		log.Info("control API on TCP", "addr", tln.Addr().String())
	}
	log.Info("gateway serving", "state_dir", c.stateDir, "control_socket", sockPath, "version", version)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return rt.Run(gctx) })
	for i, s := range servers {
		g.Go(func() error {
			if err := s.Serve(listeners[i]); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, s := range servers {
			_ = s.Shutdown(sctx)
		}
		return nil
	})
	err = g.Wait()
	log.Info("gateway stopped")
	return err
}

// startLegs registers the gateway on every enabled local leg; when one
// fails, those already registered are taken down again.
func startLegs(log *slog.Logger, c serveConfig) ([]router.Leg, *claude.AliasPool, error) {
	var legs []router.Leg
	var pool *claude.AliasPool
	undo := func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for _, l := range legs {
			_ = l.Run(ctx, make(chan message.Event, 64))
		}
	}
	if !c.noClaude {
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
		})
		if err != nil {
			return nil, nil, fmt.Errorf("registering as a Claude Code peer: %w", err)
		}
		if c.bridge && (!c.noQwen || (c.remote != nil && c.remote.enabled())) {
			exe, err := os.Executable()
			if err != nil {
				return nil, nil, fmt.Errorf("alias workers need the gateway's own path: %w", err)
			}
			env := append(os.Environ(), "CLAUDE_CONFIG_DIR="+cfgDir, "XDG_RUNTIME_DIR="+c.getenv("XDG_RUNTIME_DIR"))
			env = append(env, c.workerEnv...)
			pool = claude.NewAliasPool(claude.PoolConfig{
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
		}
		legs = append(legs, peer)
	}
	if !c.noQwen {
		home, _ := os.UserHomeDir()
		if h := c.getenv("HOME"); h != "" {
			home = h
		}
		cwd, _ := os.Getwd()
		tmp := qwen.NodeTmpDir(c.getenv)
		qhome := qwen.HomeDir(c.getenv("QWEN_HOME"), home, cwd, tmp)
		peer, err := qwen.Register(qwen.PeerConfig{
			Name: c.name, Home: qhome, RuntimeDir: c.getenv("XDG_RUNTIME_DIR"), TmpDir: tmp,
			Mode: c.mode, Inbound: c.qwenInbound, HeldExpiry: c.heldExpiry, Logger: log,
			Controllers: []qwen.ControllerVerifier{
				qwen.NewControllers(controllersPath(c.stateDir), qwen.RealClock{}),
				qwen.NewControllers(qwen.ControllersFile(qhome), qwen.RealClock{}),
			},
		})
		if err != nil {
			undo()
			if pool != nil {
				pool.Close()
			}
			return nil, nil, fmt.Errorf("registering as a Qwen Code peer: %w", err)
		}
		legs = append(legs, peer)
	}
	return legs, pool, nil
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
	f, err := os.OpenFile(filepath.Join(dir, "gateway.lock"), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another gateway is running with state directory %s", dir)
	}
	return func() { f.Close() }, nil
}

// apiToken reads <state-dir>/api-token, creating it (0600) on first start.
func apiToken(dir string) (string, error) {
	path := filepath.Join(dir, "api-token")
	b, err := uds.ReadFileCapped(path, 4096)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("api token: %w", err)
	}
	tok, err := randomToken()
	if err != nil {
		return "", err
	}
	if err := uds.CreateExclusive(path, []byte(tok+"\n")); err != nil {
		return "", fmt.Errorf("api token: %w", err)
	}
	return tok, nil
}
