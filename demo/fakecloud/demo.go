package fakecloud

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessiongateway/gateway/internal/safefile"
)

// DemoOptions configures a demo cloud: a fake on loopback with the echo
// worker on, for people trying the remote legs without an account.
type DemoOptions struct {
	Addr     string // loopback only
	OrgUUID  string
	Sessions int    // created, titled "demo 1".."demo N"
	StateDir string // the token file goes under DIR/demo-cloud; "" for a new temporary directory
	Logf     func(format string, args ...any)
}

// Demo is a running demo cloud and the bearer token file it wrote.
type Demo struct {
	*Server
	TokenFile string
	Sessions  []string // ids, in title order
	org       string
	cleanup   func()
}

// StartDemo writes a fresh bearer token to a 0600 file, listens and
// creates the sessions. Close stops it and removes what it wrote.
// demoModels are what the demo's sessions offer (remote info, remote model).
var demoModels = []Model{
	{Value: "claude-opus-4-6", DisplayName: "Opus", Description: "the most capable"},
	{Value: "claude-sonnet-4-5", DisplayName: "Sonnet", Description: "fast and capable"},
	{Value: defaultModel, DisplayName: "Default"},
}

func StartDemo(o DemoOptions) (*Demo, error) {
	if err := CheckLoopback(o.Addr); err != nil {
		return nil, err // anyone who can reach it and read the token drives it
	}
	dir, cleanup, err := demoDir(o.StateDir)
	if err != nil {
		return nil, err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		cleanup()
		return nil, err
	}
	token := "demo-" + hex.EncodeToString(b[:])
	d := &Demo{TokenFile: filepath.Join(dir, "token"), org: o.OrgUUID}
	d.cleanup = func() { _ = os.Remove(d.TokenFile); cleanup() }
	if err := safefile.WriteAtomic(d.TokenFile, []byte(token)); err != nil {
		d.cleanup()
		return nil, fmt.Errorf("write token file: %w", err)
	}
	d.Server, err = Listen(Options{Addr: o.Addr, Token: token, OrgUUID: o.OrgUUID, Echo: true, Logf: o.Logf,
		Models: demoModels, Commands: []Command{{Name: "review", Description: "Review the open changes", ArgumentHint: "[path]"}}})
	if err != nil {
		d.cleanup()
		return nil, err
	}
	for i := range o.Sessions {
		d.Sessions = append(d.Sessions, d.CreateSession(fmt.Sprintf("demo %d", i+1)))
	}
	return d, nil
}

// Close stops the fake and removes the token file (and a temporary
// directory it made).
func (d *Demo) Close() error {
	err := d.Server.Close()
	d.cleanup()
	return err
}

// Explain prints where the demo runs and how to point a gateway at it.
func (d *Demo) Explain(w io.Writer) {
	fmt.Fprintf(w, "demo cloud on %s (org %s)\n", d.URL(), d.org)
	fmt.Fprintf(w, "token file: %s\n", d.TokenFile)
	for i, id := range d.Sessions {
		fmt.Fprintf(w, "session: %s %q\n", id, fmt.Sprintf("demo %d", i+1))
	}
	fmt.Fprintf(w, "try: gateway serve --remote-url %s --remote-org %s --remote-token-file %s --remote-follow all --api 127.0.0.1:8788\n",
		d.URL(), d.org, shellQuote(d.TokenFile))
	fmt.Fprintf(w, "console: http://127.0.0.1:8788/ (gateway pair prints a sign-in link)\n")
	if len(d.Sessions) > 0 {
		fmt.Fprintf(w, "then: gateway send bridge:%s 'hello'   (sessions echo; 'ask ...', 'bash CMD' and 'plan' raise permission prompts)\n", d.Sessions[0])
	}
}

// DemoInfo is what Explain says, as gateway demo-cloud --json prints it.
type DemoInfo struct {
	URL       string   `json:"url"`
	Org       string   `json:"org"`
	TokenFile string   `json:"token_file"`
	Sessions  []string `json:"sessions"`
	// ServeArgs are serve's flags that follow the demo's sessions.
	ServeArgs []string `json:"serve_args"`
}

// Info is what Explain prints, as data.
func (d *Demo) Info() DemoInfo {
	return DemoInfo{URL: d.URL(), Org: d.org, TokenFile: d.TokenFile, Sessions: append([]string{}, d.Sessions...),
		ServeArgs: []string{"--remote-url", d.URL(), "--remote-org", d.org, "--remote-token-file", d.TokenFile, "--remote-follow", "all", "--api", "127.0.0.1:8788"}}
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
