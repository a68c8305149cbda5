package main

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/cli"
	"github.com/sessiongateway/gateway/leg/federation"
	"github.com/sessiongateway/gateway/router"
)

// federationCmd is the federation verb group; the work is the federation
// package's, the answer the running gateway's.
func (a *app) federationCmd() *cobra.Command {
	c := &cobra.Command{Use: "federation COMMAND", Short: "gateways on other hosts: status, host key",
		Example: "  gateway federation status\n  gateway federation keygen --show"}
	status := a.verb(&cobra.Command{Use: "status", Short: "this host's view of the federation", Args: cli.Nargs(0, 0),
		Example: "  gateway federation status --json"}, true, func(o *cli.IO, _ []string) error {
		raw, err := o.Client().Federation(a.ctx)
		if err != nil {
			return err
		}
		err = federation.WriteStatus(o.Stdout, raw, o.JSON)
		if errors.Is(err, federation.ErrNotEnabled) && o.JSON {
			return cli.Exit(exitError) // {"enabled": false} is printed, and is the answer
		}
		return err
	})
	var key string
	var force, show bool
	keygen := a.verb(&cobra.Command{Use: "keygen", Short: "write this host's key and print its public key", Args: cli.Nargs(0, 0),
		Example: "  gateway federation keygen\n  gateway federation keygen --show --json"}, true, func(o *cli.IO, _ []string) error {
		args := []string{"--state-dir", o.StateDir, "--force=" + fmtBool(force), "--show=" + fmtBool(show)}
		if key != "" {
			args = append(args, "--federation-key", key)
		}
		var out, errb bytes.Buffer
		code := federation.KeygenMain(args, a.e.getenv, o.StateDir, &out, &errb)
		if code != exitOK {
			return &cli.Error{Exit: code, Code: cli.CodeFailed, Err: errors.New(strings.TrimPrefix(strings.TrimSpace(errb.String()), "gateway: "))}
		}
		o.Note("%s", strings.TrimSpace(errb.String()))
		o.Print(map[string]string{"public_key": strings.TrimSpace(out.String())}, func(w io.Writer) { _, _ = out.WriteTo(w) })
		return nil
	})
	keygen.Flags().StringVar(&key, "federation-key", "", "where the host key is written (env GATEWAY_FEDERATION_KEY; default: <state-dir>/federation/host.key)")
	keygen.Flags().BoolVar(&force, "force", false, "replace a host key already there (every other host must then pin the new public key)")
	keygen.Flags().BoolVar(&show, "show", false, "print the public key of the host key already there; write nothing")
	return group(c, status, keygen)
}

func fmtBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// The router is what the federation node serves and answers through.
var _ federation.Router = (*router.Router)(nil)
