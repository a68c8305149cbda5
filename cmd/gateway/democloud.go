package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/testkit/fakecloud"
)

// runDemoCloud runs testkit/fakecloud on loopback with the echo worker on,
// so people can try the remote legs without an account: it writes a fresh
// bearer token to a 0600 file, prints how to point `gateway serve` at it,
// and serves until ctx ends (SIGINT), then removes what it wrote.
func runDemoCloud(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "demo-cloud")
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	org := fs.String("org", "", "organisation uuid (default: a random one)")
	n := fs.Int("sessions", 2, `sessions to create, titled "demo 1".."demo N"`)
	stateDir := fs.String("state-dir", "", "write the token file under DIR/demo-cloud (default: a new temporary directory)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 0 || *n < 0 {
		fmt.Fprintln(e.stderr, "usage: gateway demo-cloud [--addr 127.0.0.1:0] [--org UUID] [--sessions N] [--state-dir DIR]")
		return exitUsage
	}
	// Anyone who can reach the fake and read the token drives it: never
	// let it face a network.
	if err := fakecloud.CheckLoopback(*addr); err != nil {
		fmt.Fprintf(e.stderr, "gateway: --addr %q: the demo cloud listens on loopback only (127.0.0.1, ::1 or localhost)\n", *addr)
		return exitUsage
	}
	if *org == "" {
		*org = uuid.NewString()
	} else if _, err := uuid.Parse(*org); err != nil {
		fmt.Fprintf(e.stderr, "gateway: --org %q is not a uuid\n", *org)
		return exitUsage
	}

	dir, cleanup, err := demoDir(*stateDir)
	if err != nil {
		return fail(e, err)
	}
	defer cleanup()
	secret, err := api.NewSecret()
	if err != nil {
		return fail(e, err)
	}
	token := "demo-" + secret
	tokenFile := filepath.Join(dir, "token")
	if err := safefile.WriteAtomic(tokenFile, []byte(token)); err != nil {
		return fail(e, fmt.Errorf("write token file: %w", err))
	}
	defer os.Remove(tokenFile)

	srv, err := fakecloud.Listen(fakecloud.Options{
		Addr: *addr, Token: token, OrgUUID: *org, Echo: true,
		Logf: func(format string, args ...any) { fmt.Fprintf(e.stderr, format+"\n", args...) },
	})
	if err != nil {
		return fail(e, err)
	}
	defer srv.Close()
	ids := make([]string, *n)
	for i := range ids {
		ids[i] = srv.CreateSession(fmt.Sprintf("demo %d", i+1))
	}

	fmt.Fprintf(e.stdout, "demo cloud on %s (org %s)\n", srv.URL(), *org)
	fmt.Fprintf(e.stdout, "token file: %s\n", tokenFile)
	for i, id := range ids {
		fmt.Fprintf(e.stdout, "session: %s %q\n", id, fmt.Sprintf("demo %d", i+1))
	}
	fmt.Fprintf(e.stdout, "try: gateway serve --remote-url %s --remote-org %s --remote-token-file %s --remote-follow all\n",
		srv.URL(), *org, shellQuote(tokenFile))
	if len(ids) > 0 {
		fmt.Fprintf(e.stdout, "then: gateway send bridge:%s 'hello'   (sessions echo; 'ask ...', 'bash CMD' and 'plan' raise permission prompts)\n", ids[0])
	}
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		return fail(e, err)
	}
	return exitOK
}

// demoDir returns the 0700 directory the token file goes in: DIR/demo-cloud
// under a state directory (which must itself be a real directory, not a
// symlink), or a new temporary directory, removed again by cleanup.
func demoDir(stateDir string) (dir string, cleanup func(), err error) {
	if stateDir == "" {
		dir, err := os.MkdirTemp("", "gateway-demo-cloud-")
		if err != nil {
			return "", nil, err
		}
		return dir, func() { os.RemoveAll(dir) }, nil
	}
	for _, d := range []string{stateDir, filepath.Join(stateDir, "demo-cloud")} {
		if err := safefile.EnsureDir(d); err != nil {
			if errors.Is(err, safefile.ErrSymlink) {
				return "", nil, fmt.Errorf("%s is a symlink; give --state-dir a real directory", d)
			}
			return "", nil, err
		}
	}
	return filepath.Join(stateDir, "demo-cloud"), func() {}, nil
}

// shellQuote quotes a path for the printed command line when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
