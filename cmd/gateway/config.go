package main

import (
	"flag"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/settings"
)

// precedenceHelp is shown by `serve -h` and `config -h`; docs/configuration.md says the same.
const precedenceHelp = `Every serve flag can also come from, in increasing precedence:
  its default < the config file < its environment variable < the command line.
  Config file: --config PATH (env GATEWAY_CONFIG), else each of
    $XDG_CONFIG_HOME/gateway/config.json (~/.config/gateway/config.json) and
    <state-dir>/config.json that exists, the state dir's winning key by key;
    JSON with comments and trailing commas, keys are flag names:
    {"name": "gw", "settle": "3s", "bridge": false, "allow-host": ["a", "b"]}
  Environment: GATEWAY_<NAME>, dashes as underscores, e.g. GATEWAY_REMOTE_ORG;
    repeatable flags take a comma-separated list there (an array in the file).
  Secrets from files: GATEWAY_<NAME>_FILE, or "<name>_file" in the config file,
    reads the value from that file (trimmed; mode 0600 or stricter, no symlink);
    giving both the value and its _FILE in one place is an error.
  A higher layer replaces a lower one, lists included.
`

// Limits on what the configuration layer reads.
const (
	maxConfigFile = 1 << 20           // a config file is a page of settings
	maxSecretFile = auth.MaxTokenFile // a _FILE secret is a token or a key
)

// configFlag registers --config; its default comes from GATEWAY_CONFIG
// through the same layer as every flag (loadSettings reads it first).
func configFlag(fs *flag.FlagSet) *string {
	return fs.String("config", "", "config file (env GATEWAY_CONFIG; default $XDG_CONFIG_HOME/gateway/config.json and <state-dir>/config.json, each if it exists)")
}

// loadSettings fills fs from the gateway's layers: GATEWAY_<NAME>
// variables, --config or <state-dir>/config.json, the command line. The
// flags named in skip are the command's own (--json of gateway config) and
// take only the command line.
//
// The default config file is in the state directory, which is checked
// first: one that cannot be used is reported as itself, with what to do,
// not as a config.json that cannot be read.
func loadSettings(fs *flag.FlagSet, e *env, args []string, skip ...string) (*settings.Settings, []string, error) {
	var dirErr error
	st, rest, err := settings.Load(fs, args, settings.Options{
		Getenv: e.getenv, EnvPrefix: "GATEWAY_", ConfigFlag: "config", Skip: skip, NotInFile: []string{"state-dir"},
		KeyHint: "keys are serve's flag names; see gateway config -h",
		DefaultFiles: func(fs *flag.FlagSet) []string {
			files := []string{settings.UserConfigFile(e.getenv, "gateway")}
			if sd := fs.Lookup("state-dir"); sd != nil {
				if dirErr = safefile.UsableDir(sd.Value.String()); dirErr == nil {
					files = append(files, filepath.Join(sd.Value.String(), "config.json"))
				}
			}
			return files
		},
		MaxFile: maxConfigFile, MaxSecret: maxSecretFile,
	})
	if err == nil && dirErr != nil {
		err = stateDirError(dirErr)
	}
	return st, rest, err
}

// stateDirError says which directory is the state directory and how to
// name another.
func stateDirError(err error) error {
	return fmt.Errorf("state directory (--state-dir, env GATEWAY_STATE_DIR) %w", err)
}

// configCmd is `gateway config`: serve's flags and checks, then a print
// of the result instead of a start.
func (a *app) configCmd() *cobra.Command {
	c := &cobra.Command{Use: "config", Short: "print serve's effective configuration and where each value came from, secrets redacted",
		Long: "Prints serve's effective configuration: every key, its value and where it came from\n" +
			"(default, file, env, flag or _FILE), secrets redacted; starts nothing. Exits 2 naming the\n" +
			"bad key when the configuration is invalid.\n\n" + precedenceHelp,
		Example: "  gateway config\n  gateway config --json --legs claude"}
	var asJSON *bool
	fs := stdFlags(c)
	load := serveFlags(a.e, fs, func(fs *flag.FlagSet) {
		asJSON = fs.Bool("json", false, "print JSON: [{key, value, source, origin, file}]")
	})
	c.Flags().AddGoFlagSet(fs)
	c.RunE = func(c *cobra.Command, args []string) error {
		if helpAsked(args) {
			return c.Help()
		}
		plan, err := load(args)
		if err != nil {
			return err
		}
		a.json = *asJSON
		return plan.settings.Print(a.e.stdout, *asJSON)
	}
	return c
}
