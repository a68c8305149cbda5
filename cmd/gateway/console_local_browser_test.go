package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/away"
	"github.com/sessiongateway/gateway/message"
)

// localSession is the fake local Claude Code session whose hook the
// browser test runs: a registry entry for the test binary's parent, so the
// `gateway hook` child (whose parent, this process, is the in-process
// gateway's own entry) has it for an ancestor, as a real hook run by the
// CLI through a shell does.
const localSession = "5c0e1d2f-0000-4000-8000-0000000c0501"

func writeLocalSession(t *testing.T, configDir, runtime, name string) string {
	t.Helper()
	ppid := os.Getppid()
	socket := filepath.Join(runtime, "cc-socks", strconv.Itoa(ppid)+".sock")
	entry, _ := json.Marshal(map[string]any{"pid": ppid, "sessionId": localSession, "cwd": "/work", "name": name,
		"kind": "interactive", "messagingSocketPath": socket})
	if err := os.WriteFile(filepath.Join(configDir, "sessions", strconv.Itoa(ppid)+".json"), entry, 0o600); err != nil {
		t.Fatal(err)
	}
	return socket
}

func hookInput(command string) string {
	b, _ := json.Marshal(map[string]any{"session_id": localSession, "transcript_path": "/tmp/t.jsonl", "cwd": "/work",
		"permission_mode": "default", "hook_event_name": "PermissionRequest", "tool_name": "Bash",
		"tool_input": map[string]string{"command": command},
		"permission_suggestions": []any{map[string]any{"type": "addRules", "behavior": "allow", "destination": "localSettings",
			"rules": []any{map[string]string{"toolName": "Bash", "ruleContent": command}}}}})
	return string(b)
}

// hookProc is one `gateway hook PermissionRequest` run.
type hookProc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan error
}

// TestTheConsoleAnswersALocalSessionsHookPrompt drives the console in
// Chromium against prompts of a local Claude Code session raised by its
// PermissionRequest hook (the real `gateway hook PermissionRequest`
// command, run as a child): each is shown with the session's name and a
// local hook badge, and an Allow, an "always allow" suggestion and a Deny
// with a reason each come out of the hook as its decision, recorded as the
// console sign-in's answer. The away toggle switches the gateway's away
// switch on and off, as GET /v1/away then says.
func TestTheConsoleAnswersALocalSessionsHookPrompt(t *testing.T) {
	chromium, playwright := browserTools(t)
	shots := os.Getenv("GATEWAY_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "gateway-console-screenshots")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)

	root := t.TempDir()
	g := startGateway(t, root, func(c *serveConfig) {
		c.noQwen, c.bridge, c.apiAddr = true, false, "127.0.0.1:0"
		// Long enough that no prompt goes back to its terminal mid-test.
		c.localPromptWait, c.away = 10*time.Minute, &away.State{}
	})
	t.Cleanup(func() { g.Stop(t) })
	socket := writeLocalSession(t, g.ConfigDir, g.Runtime, "deploy-box")
	client := api.NewUnixClient(filepath.Join(g.StateDir, "gateway.sock"))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	hooks := map[string]*hookProc{} // by the command the prompt asks to run
	steps := map[string]func(args map[string]string) (any, error){
		"pair": func(map[string]string) (any, error) {
			return map[string]string{"url": pairLink(t, g.StateDir, "", "approve")}, nil
		},
		"hook": func(a map[string]string) (any, error) {
			h := &hookProc{done: make(chan error, 1)}
			h.cmd = exec.CommandContext(t.Context(), self, "hook", "PermissionRequest")
			h.cmd.Env = append(os.Environ(), "GATEWAY_TEST_AS_GATEWAY=1", "GATEWAY_STATE_DIR="+g.StateDir)
			h.cmd.Stdin = strings.NewReader(hookInput(a["command"]))
			h.cmd.Stdout, h.cmd.Stderr = &h.stdout, &h.stderr
			if err := h.cmd.Start(); err != nil {
				return nil, err
			}
			go func() { h.done <- h.cmd.Wait() }()
			mu.Lock()
			hooks[a["command"]] = h
			mu.Unlock()
			return nil, nil
		},
		"check-hook": func(a map[string]string) (any, error) {
			mu.Lock()
			h := hooks[a["command"]]
			mu.Unlock()
			if h == nil {
				return nil, errors.New("no hook ran " + a["command"])
			}
			select {
			case err := <-h.done:
				if err != nil {
					return nil, fmt.Errorf("the hook: %v, %s", err, h.stderr.String())
				}
			case <-time.After(10 * time.Second):
				return nil, errors.New("the hook never ended after the console's answer")
			}
			want := `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":` + a["decision"] + `}}`
			if got := strings.TrimSpace(h.stdout.String()); got != want {
				return nil, fmt.Errorf("the hook printed %q (stderr %q), want %s", got, h.stderr.String(), want)
			}
			return nil, answeredFromTheConsole(client, a["command"], "uds:"+socket)
		},
		"check-away": func(a map[string]string) (any, error) {
			st, err := client.Away(ctxT(t))
			if err != nil {
				return nil, err
			}
			if want := a["want"] == "on"; st.Away != want || st.Since.IsZero() {
				return nil, fmt.Errorf("GET /v1/away says %+v, want away %v with when it was set", st, want)
			}
			return nil, nil
		},
	}
	runBrowserScript(t, "console_local_browser.js", 3*time.Minute, playwright, chromium, shots, steps)
	expectScreenshots(t, shots, "local-away", "local-prompt", "local-here")
}

// answeredFromTheConsole checks the settled prompt of the hook that asked
// to run command: the local session's, answered by a console sign-in.
func answeredFromTheConsole(client *api.Client, command, address string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ps, err := client.Permissions(ctx, true)
	if err != nil {
		return err
	}
	for _, p := range ps {
		var in struct{ Command string }
		if json.Unmarshal(p.Input, &in) != nil || in.Command != command {
			continue
		}
		if p.Source != message.SourceHook || p.Name != "deploy-box" || p.Address != address || p.SessionID != localSession {
			return fmt.Errorf("the prompt is %+v, want the local session's, from its hook", p)
		}
		if p.State != message.PermissionAnswered || !strings.HasPrefix(p.AnsweredBy, "console:pair_") {
			return fmt.Errorf("the prompt is %s, answered by %q: want answered by the console's sign-in", p.State, p.AnsweredBy)
		}
		return nil
	}
	return errors.New("no prompt asked to run " + command)
}
