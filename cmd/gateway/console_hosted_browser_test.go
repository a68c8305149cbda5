package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/leg/hosted"
	"github.com/sessiongateway/gateway/message"
)

// TestTheConsoleStartsDrivesAndStopsAHostedSession drives the console in
// Chromium against a gateway whose hosted leg runs a stand-in Claude Code
// (fakeHostedCLI): a read-only sign-in sees no start form and no Stop; a
// send sign-in's form shows the gateway's error for a directory that does
// not exist, then starts a session whose card shows its agent, directory,
// state and the echo of its first prompt; a message from the card's send
// box is its next turn; Stop ends it, and the API no longer lists it.
func TestTheConsoleStartsDrivesAndStopsAHostedSession(t *testing.T) {
	chromium, playwright := browserTools(t)
	shots := os.Getenv("GATEWAY_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "gateway-console-screenshots")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)

	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	hostedFlags := hosted.RegisterFlags(fs)
	if err := fs.Parse([]string{"--claude-path", fakeClaude(t)}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	g := startGateway(t, root, func(c *serveConfig) {
		c.noQwen, c.bridge, c.apiAddr, c.hosted = true, false, "127.0.0.1:0", hostedFlags
	})
	t.Cleanup(func() { g.Stop(t) })
	client := api.NewUnixClient(filepath.Join(g.StateDir, "gateway.sock"))

	steps := map[string]func(args map[string]string) (any, error){
		"pair": func(a map[string]string) (any, error) {
			return map[string]string{"url": pairLink(t, g.StateDir, "", a["scope"])}, nil
		},
		"dir": func(map[string]string) (any, error) {
			return map[string]string{"dir": t.TempDir()}, nil
		},
		"check-started": func(a map[string]string) (any, error) {
			s, err := hostedSession(client, a["name"])
			if err != nil {
				return nil, err
			}
			if s == nil || s.Protocol != message.ProtocolHosted || s.Kind != message.AgentClaude || s.Cwd != a["dir"] {
				return nil, fmt.Errorf("the API lists %+v, want the claude session in %s", s, a["dir"])
			}
			b, err := os.ReadFile(filepath.Join(a["dir"], ".fake-args"))
			if err != nil {
				return nil, err
			}
			args := strings.Split(strings.TrimSpace(string(b)), "\n")
			for _, want := range [][]string{{"--permission-mode", a["mode"]}, {"--model", a["model"]}} {
				i := slices.Index(args, want[0])
				if i < 0 || i+1 >= len(args) || args[i+1] != want[1] {
					return nil, fmt.Errorf("the CLI was started with %q, want %s %s", args, want[0], want[1])
				}
			}
			return nil, nil
		},
		"check-gone": func(a map[string]string) (any, error) {
			s, err := hostedSession(client, a["name"])
			if err != nil {
				return nil, err
			}
			if s != nil {
				return nil, fmt.Errorf("the API still lists %+v", s)
			}
			return nil, nil
		},
	}
	runBrowserScript(t, "console_hosted_browser.js", 3*time.Minute, playwright, chromium, shots, steps)
	expectScreenshots(t, shots, "hosted-read-only", "hosted-start-error", "hosted-session")
}

// hostedSession is the hosted session name as the API lists it; nil when
// it is not listed.
func hostedSession(client *api.Client, name string) (*message.Session, error) {
	if name == "" {
		return nil, errors.New("no name given")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ss, err := client.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range ss {
		if s.Address == hosted.AddressPrefix+name {
			return &s, nil
		}
	}
	return nil, nil
}
