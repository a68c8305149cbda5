package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/internal/away"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/cli"
	"github.com/sessiongateway/gateway/internal/debugserver"
	"github.com/sessiongateway/gateway/internal/settings"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/federation"
	"github.com/sessiongateway/gateway/leg/hosted"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/notify"
	"github.com/sessiongateway/gateway/observability"
)

func (a *app) serveCmd() *cobra.Command {
	c := &cobra.Command{Use: "serve", Short: "run the gateway in the foreground",
		Long:    "Run the gateway in the foreground until SIGINT or SIGTERM (SIGHUP reloads).\n\n" + precedenceHelp,
		Example: "  gateway serve\n  gateway serve --legs claude --api 127.0.0.1:8080\n  GATEWAY_NAME=gw gateway serve --state-dir /srv/gateway"}
	fs := stdFlags(c)
	load := serveFlags(a.e, fs, nil)
	c.Flags().AddGoFlagSet(fs)
	_ = c.Flags().MarkHidden("debug-addr")
	c.RunE = func(c *cobra.Command, args []string) error {
		if helpAsked(args) {
			return c.Help()
		}
		plan, err := load(args)
		if err != nil {
			return err
		}
		if plan.logFormat != observability.LogJSON { // JSON asked for: JSON lines only, terminal or not
			plan.cfg.summary = observability.Terminal(a.e.stderr)
		}
		log := observability.NewFormatLogger(a.e.stderr, plan.logLevel, plan.logFormat)
		if a.e.environ != nil {
			for _, m := range settings.MisspeltEnv(fs, "GATEWAY_", a.e.environ()) {
				log.Warn(m.Var+" is not a gateway setting: did you mean "+m.Want+"?", "variable", m.Var)
			}
		}
		for _, w := range plan.warnings {
			log.Warn(w)
		}
		if err := serve(a.ctx, log, plan.cfg); err != nil {
			return &cli.Error{Exit: exitError, Code: cli.CodeFailed, Err: errors.New(strings.ReplaceAll(plan.settings.Annotate(err.Error()), "\n", "; "))} // one line, secrets redacted
		}
		return nil
	}
	return c
}

// stdFlags gives c a flag.FlagSet of its own, as serve's flags are (the
// configuration layer reads them from a FlagSet): c shows them in help
// and completion and leaves their parsing to the command.
func stdFlags(c *cobra.Command) *flag.FlagSet {
	fs := flag.NewFlagSet("gateway "+c.Name(), flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error comes back, said once with its usage line
	fs.Usage = func() {}
	c.DisableFlagParsing = true
	return fs
}

func helpAsked(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			return true
		case "--":
			return false
		}
	}
	return false
}

// newFlags is a flag set of one command, printing to stderr.
func newFlags(e *env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("gateway "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

// stateDirFlag registers --state-dir with its environment default.
func stateDirFlag(fs *flag.FlagSet, e *env) *string {
	return fs.String("state-dir", defaultStateDir(e.getenv), "state directory (env GATEWAY_STATE_DIR)")
}

// multi is a repeatable flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }
func (m *multi) Type() string       { return "strings" }

// servePlan is serve's checked configuration: what serve runs, and what
// `gateway config` prints.
type servePlan struct {
	cfg       serveConfig
	logLevel  slog.Level
	logFormat observability.LogFormat
	settings  *settings.Settings
	warnings  []string // said once at start: settings that change nothing
}

// serveFlags registers serve's flags (and the command's own, via extra) on
// fs and returns what fills them from every configuration layer and checks
// the result. That starts nothing; a bad configuration is a usage error
// saying why. A new serve flag is one xxxFlags(fs, e) call line here: the
// configuration layer finds it with fs.VisitAll.
func serveFlags(e *env, fs *flag.FlagSet, extra func(*flag.FlagSet)) func(args []string) (*servePlan, error) {
	configFlag(fs)
	sd := stateDirFlag(fs, e)
	name := fs.String("name", "gateway", "name to register under on the local legs")
	apiAddr := fs.String("api", "", "also serve the control API on this TCP address: bearer tokens (<state-dir>/api-token, or scoped ones from gateway tokens), Host allowlist (--allow-host), TLS with --tls-cert/--tls-key off loopback")
	var hosts multi
	fs.Var(&hosts, "allow-host", "extra Host header value accepted on --api (repeatable)")
	mode := fs.String("mode", "prompting", "the gateway's own review class for inbound mode parity: bypass or prompting")
	inbound := fs.String("inbound", "parity", "inbound policy: accept, hold, refuse, or parity (hold what a sender's review class would not pass here)")
	requireAuth := fs.Bool("require-auth", false, "refuse inbound connections without the right token")
	settle := fs.Duration("settle", 2*time.Second, "how long a Claude send waits for a held/dropped receipt before it counts as delivered")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := observability.LogAuto
	fs.Var(&logFormat, "log-format", "auto (text on a terminal, else JSON lines), text or json")
	legs := fs.String("legs", "claude,qwen", "legs to run, comma-separated: claude, qwen, remote (needs remote credentials, which also enable it alone) or none (only remote, federation or hosted sessions)")
	debugAddr := fs.String("debug-addr", "", "serve net/http/pprof on this loopback address, for operators (off by default)")
	bridge := fs.Bool("bridge", true, "publish each local leg's sessions on the other (Claude Code <-> Qwen Code) and forward between them")
	var bridgeOnly multi
	fs.Var(&bridgeOnly, "bridge-only", "limit the bridge to sessions whose name matches this glob (repeatable)")
	maxAliases := fs.Int("max-alias-workers", claude.DefaultMaxWorkers, "most alias worker processes the bridge runs for the Claude leg at once (one per session of another leg, about 17 MB each); aliases beyond it are refused")
	localWait := fs.Duration("local-prompt-wait", claude.DefaultLocalPromptWait, "how long a local session's prompt (from its PermissionRequest hook, gateway hooks install) waits for an answer from elsewhere before its terminal asks; while `gateway away on`, it waits until an answer or the hook's own timeout")
	heldExpiry := fs.String("held-expiry", "5m", "how long the Qwen inbox holds a message: 1m, 5m, 10m or never")
	remote := remoteFlags(fs, e)
	didFile := didFileFlag(fs, e)
	life := lifecycleFlags(fs, e)
	apiHard := apiFlags(fs, e)
	files := filesFlags(fs, e)
	fed, notes, hostedFlags := federation.RegisterFlags(fs), notify.RegisterFlags(fs), hosted.RegisterFlags(fs)
	approver := fs.String("approver", "", "address of a local session (or alias) that gets each remote permission prompt as a message and answers it by replying allow, deny or answer (env GATEWAY_APPROVER)")
	own := settings.OwnFlags(fs, extra)
	fs.VisitAll(func(f *flag.Flag) { // help names each flag's variable, as the layer will
		if v := settings.EnvName("GATEWAY_", f.Name); !slices.Contains(own, f.Name) && !strings.Contains(f.Usage, v) {
			f.Usage += " (env " + v + ")"
		}
	})
	return func(args []string) (*servePlan, error) {
		st, rest, err := loadSettings(fs, e, args, own...)
		if err == nil {
			err = settings.Stray(fs, args, rest) // serve and config take only flags
		}
		if err != nil {
			var pe *settings.ParseError
			if errors.As(err, &pe) {
				return nil, pe.Err // a flag the command line got wrong: said with its usage line
			}
			return nil, cli.Usagef("%s", strings.ReplaceAll(err.Error(), "\n", "\ngateway: "))
		}
		// A check names the flag; annotate adds the file line or variable it came from.
		fail := func(format string, a ...any) (*servePlan, error) {
			return nil, cli.Usagef("%s", st.Annotate(fmt.Sprintf(format, a...)))
		}
		if err := remote.check(); err != nil {
			return fail("%v", err)
		}
		if err := apiHard.check(*apiAddr); err != nil {
			return fail("%v", err) // also caught by `gateway config`
		}
		if err := debugserver.CheckAddr(*debugAddr); *debugAddr != "" && err != nil {
			return fail("--debug-addr %v", err)
		}
		if err := errors.Join(files.check(), fed.Check(*sd), notes.Check(), hostedFlags.Check()); err != nil {
			return fail("%v", err)
		}
		st.ShowDefault("files-dir", files.filesDir(*sd))
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
		if len(enabled) == 0 && !remote.enabled() && !fed.Enabled() && !hostedFlags.Enabled() {
			return fail("--legs: name at least one leg, give remote credentials or join a federation")
		}
		life.level = func() (slog.Level, string, error) { // SIGHUP: the config file is the layer that can change
			switch src, _ := st.Source("log-level"); src { // kept, above the file: the reload logs it unchanged, and why
			case settings.Flag:
				return 0, "set by --log-level", nil
			case settings.Env:
				return 0, "set by GATEWAY_LOG_LEVEL", nil
			}
			p, err := serveFlags(e, newFlags(&env{stderr: io.Discard, getenv: e.getenv}, "serve"), extra)(args)
			if err != nil {
				return 0, "", err
			}
			return p.logLevel, "", nil
		}
		return &servePlan{logLevel: lvl, logFormat: logFormat, settings: st, warnings: remote.unused(st, *legs), cfg: serveConfig{
			stateDir: *sd, name: *name, apiAddr: *apiAddr, logFormat: logFormat, hosts: hosts, mode: m, inbound: pol,
			qwenInbound: qpol, heldExpiry: qwen.ParseHeldExpiry(*heldExpiry), noClaude: !enabled["claude"], noQwen: !enabled["qwen"], bridge: *bridge, bridgeOnly: bridgeOnly,
			maxAliases: *maxAliases, localPromptWait: *localWait,
			requireAuth: *requireAuth, settle: *settle, getenv: e.getenv, remote: remote, did: did, approver: *approver,
			life: life, api: apiHard, files: files, fed: fed, notify: notes, hosted: hostedFlags, debugAddr: *debugAddr,
		}}, nil
	}
}

type serveConfig struct {
	logFormat   observability.LogFormat // --log-format, which alias workers follow
	stateDir    string
	name        string
	apiAddr     string
	debugAddr   string // --debug-addr: pprof on loopback; "" for none
	hosts       []string
	mode        message.Mode
	inbound     claude.Policy
	qwenInbound qwen.Policy
	heldExpiry  time.Duration
	noClaude    bool
	noQwen      bool
	bridge      bool
	bridgeOnly  []string
	maxAliases  int // --max-alias-workers
	// localPromptWait is --local-prompt-wait: how long a hook's prompt
	// waits before its terminal asks (not while away).
	localPromptWait time.Duration
	away            *away.State // the away switch (<state-dir>/away.json); run opens it
	workerEnv       []string    // extra environment for alias workers (tests)
	requireAuth     bool
	settle          time.Duration
	getenv          func(string) string
	remote          *remoteOpts            // nil or without credentials: no remote leg
	did             addressing.DIDResolver // --did-file; nil refuses did: addresses
	approver        string                 // --approver: the session that answers remote prompts; "" for none
	life            *lifecycleOpts         // --grace and SIGHUP; nil takes the defaults
	api             *apiOpts               // TLS, CORS and rate limits of --api; nil takes the defaults
	files           *filesOpts             // --files-dir and the uploads limits; nil takes the defaults
	fed             *federation.Flags      // --federation and its options; nil or unset: no federation
	summary         io.Writer              // a terminal for the start-up summary; nil for none
	notify          *notify.Flags          // --notify and its options; nil or unset: no notifications
	hosted          *hosted.Flags          // --max-hosted and the CLIs' paths; nil: no hosted sessions
}
