package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sessiongateway/gateway/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit codes, so scripts can tell outcomes apart (docs/cli.md's table).
const (
	exitOK           = cli.ExitOK
	exitError        = cli.ExitError
	exitUsage        = cli.ExitUsage
	exitNotDelivered = cli.ExitNotDelivered
	exitPending      = cli.ExitPending
)

// env is what every command gets: where to print and find the gateway.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	environ        func() []string // for serve's did-you-mean of GATEWAY_* variables; nil for none
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, environ: os.Environ}, os.Args[1:])
	stop()
	os.Exit(code)
}

// app is one run of the command line: the flags every command shares and
// what the verbs print to.
type app struct {
	ctx      context.Context
	e        *env
	stateDir string // --state-dir, every command's
	json     bool   // --json, where a command has it
}

func run(ctx context.Context, e *env, args []string) int {
	a := &app{ctx: ctx, e: e}
	root := a.root()
	root.SetArgs(longFlags(root, args))
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var ce *cli.Error
	if !errors.As(err, &ce) { // the library's own: an unknown command or flag, wrong arguments
		ce = &cli.Error{Exit: exitUsage, Code: cli.CodeUsage, Err: cli.FlagHint(cmd, err)}
	}
	o := a.io()
	o.JSON = o.JSON || cli.WantsJSON(args)
	code := cli.Report(o, ce)
	switch {
	case ce.Exit != exitUsage || ce.Quiet || o.JSON || cmd == nil:
	case !cmd.HasParent():
		fmt.Fprintln(e.stderr, "Run 'gateway --help' for usage.")
	default:
		fmt.Fprintf(e.stderr, "usage: %s\nRun '%s --help' for more.\n", cmd.UseLine(), cmd.CommandPath())
	}
	return code
}

// io is the verbs' IO for this run's flags.
func (a *app) io() *cli.IO {
	return &cli.IO{Stdout: a.e.stdout, Stderr: a.e.stderr, JSON: a.json, StateDir: a.stateDir, DefaultStateDir: defaultStateDir(a.e.getenv)}
}

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "gateway",
		Short: "a headless gateway that lets AI coding-agent sessions reach each other",
		Long: "gateway lets Claude Code, Qwen Code and claude.ai sessions reach each other.\n" +
			"Run `gateway serve`, then the other commands ask the running gateway.\n" +
			"Every command takes --state-dir (env GATEWAY_STATE_DIR) and -h.",
		Example:       "  gateway serve\n  gateway sessions\n  gateway send work-08 \"hello\" --wait\n  gateway help send",
		Version:       strings.TrimPrefix(cli.Build(version).String(), "gateway "),
		Args:          cobra.ArbitraryArgs,
		SilenceErrors: true, SilenceUsage: true,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 { // cobra sends here an unknown command: say so, with suggestions
				return fmt.Errorf("unknown command %q%s", args[0], cli.DidYouMean(cli.SubSuggestions(c, args[0])))
			}
			c.SetOut(a.e.stdout)
			_ = c.Help()
			return cli.Exit(exitUsage)
		},
	}
	root.SetOut(a.e.stdout)
	root.SetErr(a.e.stderr)
	root.SetVersionTemplate("gateway {{.Version}}\n")
	root.PersistentFlags().StringVar(&a.stateDir, "state-dir", defaultStateDir(a.e.getenv), "state directory (env GATEWAY_STATE_DIR)")
	root.SetHelpCommand(&cobra.Command{Use: "help [command]", Short: "Help about any command",
		RunE: func(_ *cobra.Command, args []string) error {
			// cobra's own prints the whole list and exits 0 for a topic it
			// does not know; a misspelt one is a usage error like a command.
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return cli.Usagef("no help topic %q for %s%s", strings.Join(rest, " "), target.CommandPath(), cli.DidYouMean(cli.SubSuggestions(target, rest[0])))
			}
			target.SetOut(a.e.stdout)
			return target.Help()
		}})
	for _, g := range helpGroups {
		root.AddGroup(&cobra.Group{ID: g[0], Title: g[1]})
	}
	for _, c := range a.commands() {
		c.GroupID = groupOf[c.Name()] // "" for a command no group names: "Additional Commands"
		root.AddCommand(c)
	}
	// cobra adds completion as it runs, a group with no RunE that prints its
	// help and exits 0: made now, no shell or an unknown one is a usage error.
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil {
		group(c).Example = "  source <(gateway completion bash)"
	}
	return root
}

// Help lists commands in the order commands() gives, serve first.
func init() { cobra.EnableCommandSorting = false }

// helpGroups order gateway's help by what people come to do.
var helpGroups = [][2]string{{"run", "Run and check the gateway:"}, {"msg", "Sessions and messages:"},
	{"prompt", "Permission prompts:"}, {"remote", "Remote sessions, other hosts, MCP:"}, {"access", "Access:"}}

var groupOf = map[string]string{"serve": "run", "config": "run", "status": "run", "health": "run", "version": "run",
	"demo-cloud": "run", "demo-local": "run", "sessions": "msg", "send": "msg", "watch": "msg", "idle": "msg",
	"held": "msg", "release": "msg", "outbox": "msg", "permissions": "prompt", "allow": "prompt", "deny": "prompt",
	"answer": "prompt", "away": "prompt", "hook": "prompt", "hooks": "prompt", "run": "msg", "stop": "msg", "remote": "remote", "federation": "remote", "mcp": "remote", "tokens": "access",
	"controllers": "access", "pair": "access"}

// verb makes c run body with the run's IO; json adds --json.
func (a *app) verb(c *cobra.Command, json bool, body func(o *cli.IO, args []string) error) *cobra.Command {
	if json {
		c.Flags().BoolVar(&a.json, "json", false, `print JSON; a failure is {"error": ..., "code": ...} on stdout`)
	}
	c.RunE = func(_ *cobra.Command, args []string) error {
		err := body(a.io(), args)
		var ce *cli.Error
		if err != nil && !errors.As(err, &ce) {
			err = &cli.Error{Exit: exitError, Code: cli.CodeFailed, Err: err}
		}
		return err
	}
	return c
}

// group makes c a command of subcommands: alone or with an unknown one it
// is a usage error naming them.
func group(c *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	c.AddCommand(subs...)
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			names := []string{}
			for _, s := range c.Commands() {
				names = append(names, s.Name())
			}
			return cli.Usagef("%s needs a command: %s", cli.CmdName(c), strings.Join(names, ", "))
		}
		if args[0] == "help" { // gateway remote help, as before
			return c.Help()
		}
		return cli.Usagef("unknown command %q for %s%s", args[0], c.CommandPath(), cli.DidYouMean(cli.SubSuggestions(c, args[0])))
	}
	return c
}

// longFlags spells every known long flag with two dashes: the commands
// took -state-dir as well as --state-dir before they moved to a library
// that reads a single dash as short flags.
func longFlags(root *cobra.Command, args []string) []string {
	known := map[string]bool{}
	cli.EachCommand(root, func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { known[f.Name] = true })
		}
	})
	known["help"], known["version"] = true, true
	out := make([]string, len(args))
	for i, a := range args {
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(name) > 1 && known[name] {
			a = "-" + a
		}
		out[i] = a
	}
	return out
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
