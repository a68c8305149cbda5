package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/settings"
)

// precedenceHelp is shown by `serve -h` and `config -h`; README says the same.
const precedenceHelp = `Every serve flag can also come from, in increasing precedence:
  its default < the config file < its environment variable < the command line.
  Config file: --config PATH (env GATEWAY_CONFIG), else <state-dir>/config.json
    if it exists; JSON with // and /* */ comments, keys are flag names:
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
	return fs.String("config", "", "config file (env GATEWAY_CONFIG; default <state-dir>/config.json if it exists)")
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
		Getenv: e.getenv, EnvPrefix: "GATEWAY_", ConfigFlag: "config", Skip: skip,
		KeyHint: "keys are serve's flag names; see gateway config -h",
		DefaultFile: func(fs *flag.FlagSet) string {
			sd := fs.Lookup("state-dir")
			if sd == nil {
				return ""
			}
			if dirErr = safefile.UsableDir(sd.Value.String()); dirErr != nil {
				return ""
			}
			return filepath.Join(sd.Value.String(), "config.json")
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

// runConfig is `gateway config`: serve's flags and checks, then a print
// of the result instead of a start.
func runConfig(_ context.Context, e *env, args []string) int {
	var asJSON *bool
	setup, code := setupServe(e, "config", args, func(fs *flag.FlagSet) {
		asJSON = fs.Bool("json", false, "print JSON: [{key, value, source, origin, file}]")
	})
	if setup == nil {
		return code
	}
	if err := setup.settings.Print(e.stdout, *asJSON); err != nil {
		fmt.Fprintf(e.stderr, "gateway: %v\n", err)
		return exitError
	}
	return exitOK
}

// serveUsage is the -h text of serve and config.
func serveUsage(fs *flag.FlagSet, cmd string) func() {
	return func() {
		w := fs.Output()
		if cmd == "config" {
			fmt.Fprintln(w, "usage: gateway config [--config PATH] [--json] [serve flags...]")
			fmt.Fprintln(w, "Prints serve's effective configuration: every key, its value and where it came from")
			fmt.Fprintln(w, "(default, file, env or flag), secrets redacted; starts nothing. Exits 2 naming the")
			fmt.Fprintln(w, "bad key when the configuration is invalid.")
		} else {
			fmt.Fprintln(w, "usage: gateway serve [flags]")
		}
		fmt.Fprintln(w)
		fmt.Fprint(w, precedenceHelp)
		fmt.Fprintln(w)
		fs.PrintDefaults()
	}
}
