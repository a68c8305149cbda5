package federation

import (
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/sessiongateway/gateway/internal/settings"
)

// KeygenMain is `gateway federation keygen`: it writes this host's key
// (refusing to replace one without --force) and prints its public key on
// stdout; with --show it prints the public key of the key already there.
// It returns the exit code: 0, 1 on failure, 2 on a usage error.
func KeygenMain(args []string, getenv func(string) string, stateDir string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gateway federation keygen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sd := fs.String("state-dir", stateDir, "state directory (env GATEWAY_STATE_DIR)")
	file := fs.String("federation-key", getenv("GATEWAY_FEDERATION_KEY"), "where the host key is written (env GATEWAY_FEDERATION_KEY; default: <state-dir>/federation/host.key)")
	force := fs.Bool("force", false, "replace a host key already there (every other host must then pin the new public key)")
	show := fs.Bool("show", false, "print the public key of the host key already there; write nothing")
	pos, err := settings.ParseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil || len(pos) != 0 {
		fmt.Fprintln(stderr, "usage: gateway federation keygen [--federation-key FILE] [--force] [--show]")
		return 2
	}
	if *file == "" {
		*file = KeyFile(*sd)
	}
	if p, err := filepath.Abs(*file); err == nil {
		*file = p
	}
	if *show {
		k, err := LoadKey(*file)
		if err != nil {
			fmt.Fprintln(stderr, "gateway:", err)
			return 1
		}
		fmt.Fprintln(stdout, FormatPublicKey(k.Public().(ed25519.PublicKey)))
		return 0
	}
	pub, err := Keygen(*file, *force)
	if err != nil {
		fmt.Fprintln(stderr, "gateway:", err)
		return 1
	}
	fmt.Fprintln(stdout, pub)
	fmt.Fprintf(stderr, "wrote %s (mode 0600); other hosts trust this one with a line \"HOST %s\" in their --federation-trust file\n", *file, pub)
	return 0
}
