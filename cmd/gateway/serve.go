package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/federation"
	"github.com/sessiongateway/gateway/internal/settings"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/notify"
	"github.com/sessiongateway/gateway/observability"
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
	maxAliases := fs.Int("max-alias-workers", claude.DefaultMaxWorkers, "most alias worker processes the bridge runs for the Claude leg at once (one per session of another leg, about 17 MB each); aliases beyond it are refused")
	heldExpiry := fs.String("held-expiry", "5m", "how long the Qwen inbox holds a message: 1m, 5m, 10m or never")
	remote := remoteFlags(fs, e)
	didFile := didFileFlag(fs, e)
	life := lifecycleFlags(fs, e)
	apiHard := apiFlags(fs, e)
	files := filesFlags(fs, e)
	fed, notes := federation.RegisterFlags(fs), notify.RegisterFlags(fs)
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
	if err := errors.Join(files.check(), fed.Check(*sd), notes.Check()); err != nil {
		return fail("%v", err)
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
	if *maxAliases < 1 {
		return fail("--max-alias-workers %d: want at least 1", *maxAliases)
	}
	if *approver != "" {
		if _, err := addressing.Parse(*approver); err != nil {
			return fail("--approver: %v", err)
		}
	}
	if len(enabled) == 0 && !remote.enabled() && !fed.Enabled() {
		return fail("--legs: name at least one leg, give remote credentials or join a federation")
	}
	return &servePlan{logLevel: lvl, settings: st, cfg: serveConfig{
		stateDir: *sd, name: *name, apiAddr: *apiAddr, hosts: hosts, mode: m, inbound: pol,
		qwenInbound: qpol, heldExpiry: qwen.ParseHeldExpiry(*heldExpiry), noClaude: !enabled["claude"], noQwen: !enabled["qwen"], bridge: *bridge, bridgeOnly: bridgeOnly,
		maxAliases:  *maxAliases,
		requireAuth: *requireAuth, settle: *settle, getenv: e.getenv, remote: remote, did: did, approver: *approver,
		life: life, api: apiHard, files: files, fed: fed, notify: notes,
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
	maxAliases  int      // --max-alias-workers
	workerEnv   []string // extra environment for alias workers (tests)
	requireAuth bool
	settle      time.Duration
	getenv      func(string) string
	remote      *remoteOpts            // nil or without credentials: no remote leg
	did         addressing.DIDResolver // --did-file; nil refuses did: addresses
	approver    string                 // --approver: the session that answers remote prompts; "" for none
	life        *lifecycleOpts         // --grace and SIGHUP; nil takes the defaults
	api         *apiOpts               // TLS, CORS and rate limits of --api; nil takes the defaults
	files       *filesOpts             // --files-dir and the uploads limits; nil takes the defaults
	fed         *federation.Flags      // --federation and its options; nil or unset: no federation
	notify      *notify.Flags          // --notify and its options; nil or unset: no notifications
}
