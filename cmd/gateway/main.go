package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/sessiongateway/gateway/internal/settings"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit codes, so scripts can tell outcomes apart.
const (
	exitOK           = 0
	exitError        = 1
	exitUsage        = 2
	exitNotDelivered = 3 // a final receipt other than delivered
	exitPending      = 4 // --wait timed out before a final receipt
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) int
}

// env is what every subcommand gets: where to print and find the gateway.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

var commands []command

func init() {
	commands = []command{
		{"serve", "run the gateway in the foreground", runServe},
		{"config", "print serve's effective configuration and where each value came from, secrets redacted", runConfig},
		{"sessions", "list every reachable session", runSessions},
		{"send", "send a message: send ADDRESS TEXT", runSend},
		{"watch", "print events as they happen", runWatch},
		{"held", "list inbound messages held for a decision", runHeld},
		{"release", "deliver a held message: release ID", runRelease},
		{"deny", "deny a permission prompt (deny ID --message TEXT) or a held message (deny ID [--reason TEXT])", runDeny},
		{"permissions", "list remote sessions' pending permission prompts", runPermissions},
		{"allow", "allow a permission prompt: allow ID [--input JSON] [--rule RULE]...", runAllow},
		{"answer", "answer an AskUserQuestion prompt: answer ID \"Question=Option\"...", runAnswer},
		{"outbox", "list messages waiting for a remote server's acknowledgement: outbox [--all] [--json]", runOutbox},
		{"remote", "remote sessions: remote sessions | watch ID | interrupt ID | mode ID MODE | model ID MODEL", runRemote},
		{"demo-cloud", "run a fake claude.ai on loopback to try the remote features", runDemoCloud},
		{"idle", "ask a peer to say when it is idle: idle ADDRESS [--wait]", runIdle},
		{"controllers", "manage trusted controller tokens for the Qwen inbox: add --label X | list | remove ID", runControllers},
		{"pair", "print a one-time link and QR code that signs a browser in to the console: pair [--scope approve] [--ttl 10m]", runPair},
		{"tokens", "manage scoped bearer tokens for the TCP API: add --label L --scope read,send,approve | list | remove ID", runTokens},
		{"federation", "gateways on other hosts: federation status [--json] | keygen [--force] [--show]", runFederation},
		{"mcp", "serve MCP on stdin/stdout as a session of the running gateway: mcp [--name NAME]", runMCP},
		{"health", "exit 0 when the running gateway answers /healthz (--ready: /readyz)", runHealth},
		{"version", "print the version", runVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: gateway COMMAND [flags] [args]")
	fmt.Fprintln(w)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every command takes --state-dir (env GATEWAY_STATE_DIR) and -h for its flags.")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	if args[0] == "alias-worker" { // hidden: started by serve
		return runAliasWorker(ctx, e, args[1:])
	}
	fmt.Fprintf(e.stderr, "gateway: unknown command %q\n\n", args[0])
	usage(e.stderr)
	return exitUsage
}

// parse parses flags that may come before, between or after positional
// arguments, so `send work "hi" --wait` works as users type it.
func parse(fs *flag.FlagSet, args []string) ([]string, error) { return settings.ParseArgs(fs, args) }

func newFlags(e *env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("gateway "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

// stateDirFlag registers --state-dir with its environment default.
func stateDirFlag(fs *flag.FlagSet, e *env) *string {
	return fs.String("state-dir", defaultStateDir(e.getenv), "state directory (env GATEWAY_STATE_DIR)")
}

func defaultStateDir(getenv func(string) string) string {
	if d := getenv("GATEWAY_STATE_DIR"); d != "" {
		return d
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "gateway")
	}
	home := getenv("HOME")
	if home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			home = h
		}
	}
	return filepath.Join(home, ".local", "state", "gateway")
}

func flagErr(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}
