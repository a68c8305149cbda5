package hosted

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/sessiongateway/gateway/message"
)

// agent is how one CLI is run headless.
type agent struct {
	name    string
	install string // what to run when it is missing
	// echoes: the CLI writes each user turn it takes back on stdout (Claude
	// Code, --replay-user-messages); otherwise its system init, which it
	// writes once per turn (Qwen Code), says it took the oldest.
	echoes bool
	// initialize: the CLI asks the host about tools only after an
	// initialize request (Qwen Code; interop/FINDINGS-hosted.md section 0).
	initialize bool
	// args is the command line after the program: stream-json both ways,
	// prompts over stdio, the session's mode and model, and --resume for
	// a session the CLI already knows.
	args func(r record) []string
}

var agents = map[string]agent{
	message.AgentClaude: {
		name: message.AgentClaude, install: "npm install -g @anthropic-ai/claude-code", echoes: true,
		args: func(r record) []string {
			a := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
				"--permission-prompt-tool", "stdio", "--replay-user-messages"}
			if r.Mode != "" {
				a = append(a, "--permission-mode", r.Mode)
			}
			if r.Model != "" {
				a = append(a, "--model", r.Model)
			}
			switch {
			case r.Resumable:
				a = append(a, "--resume", r.SessionID)
			case r.SessionID != "":
				a = append(a, "--session-id", r.SessionID)
			}
			return a
		},
	},
	message.AgentQwen: {
		name: message.AgentQwen, install: "npm install -g @qwen-code/qwen-code", initialize: true,
		args: func(r record) []string {
			a := []string{"--input-format", "stream-json", "--output-format", "stream-json"}
			if r.Mode != "" {
				a = append(a, "--approval-mode", qwenMode(r.Mode))
			}
			if r.Model != "" {
				a = append(a, "--model", r.Model)
			}
			switch {
			case r.Resumable:
				a = append(a, "--resume", r.SessionID)
			case r.SessionID != "":
				a = append(a, "--session-id", r.SessionID)
			}
			return a
		},
	},
}

// qwenMode is Claude Code's permission mode in Qwen Code's spelling.
func qwenMode(m string) string {
	switch m {
	case "acceptEdits":
		return "auto-edit"
	case "bypassPermissions":
		return "yolo"
	}
	return m // default, plan
}

// findCLI is the agent's program: the configured path, else its name on
// PATH; missing, an error that names the install command.
func findCLI(a agent, configured string) (string, error) {
	p := configured
	if p == "" {
		var err error
		if p, err = exec.LookPath(a.name); err != nil {
			return "", fmt.Errorf("%w: %s is not on PATH (install it: %s, or give --%s-path)", message.ErrAgentMissing, a.name, a.install, a.name)
		}
	}
	fi, err := os.Stat(p)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%w: %s is not an executable file (install it: %s)", message.ErrAgentMissing, p, a.install)
	}
	return p, nil
}

// passedEnv are the variables a hosted CLI inherits, and nothing else: what
// it needs to find its account, its config and the network. The gateway's
// own (GATEWAY_*, tokens, OTEL_*) never reach it.
var passedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
	"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR",
	"HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy", "NODE_EXTRA_CA_CERTS",
}

// passedPrefixes: the agents' own settings and credentials.
var passedPrefixes = []string{"CLAUDE_", "ANTHROPIC_", "QWEN_", "OPENAI_", "DASHSCOPE_", "DISABLE_"}

// notPassed are variables of the passed prefixes that belong to another
// session (the gateway run from inside one): its peer-socket secret above all.
var notPassed = []string{"CLAUDE_CODE_MESSAGING_TOKEN", "CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_CODE_SESSION_ID",
	"CLAUDE_PID", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_PROJECT_DIR"}

// childEnv is the environment a hosted CLI starts with, from environ.
func childEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || strings.HasPrefix(k, "GATEWAY_") || slices.Contains(notPassed, k) {
			continue
		}
		pass := false
		for _, p := range passedEnv {
			pass = pass || k == p
		}
		for _, p := range passedPrefixes {
			pass = pass || strings.HasPrefix(k, p)
		}
		if pass {
			env = append(env, kv)
		}
	}
	return append(env, "TERM=dumb", "NO_COLOR=1")
}

var errNotRunning = errors.New("hosted: the session's CLI is not running")

// Command is the command line (after the program) and the environment,
// from environ, that the leg starts a new session of agent with, in mode
// and model (empty: the CLI's defaults) and, for Claude Code, with
// sessionID: for a program that runs the same CLI beside the gateway, as
// the bench does, so the two can never differ.
func Command(agentName, mode, model, sessionID string, environ []string) (args, env []string, err error) {
	a, ok := agents[agentName]
	if !ok {
		return nil, nil, fmt.Errorf("%w: agent %q is not one of %s", message.ErrBadStart, agentName, strings.Join(message.Agents, ", "))
	}
	return a.args(record{Agent: agentName, Mode: mode, Model: model, SessionID: sessionID}), childEnv(environ), nil
}
