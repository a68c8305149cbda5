package message

import "errors"

// ProtocolHosted is the leg of sessions the gateway started itself: a
// Claude Code or Qwen Code CLI run headless (package leg/hosted).
const ProtocolHosted Protocol = "hosted"

// The agents a hosted session runs.
const (
	AgentClaude = "claude"
	AgentQwen   = "qwen"
)

// Agents are the agents a hosted session may run.
var Agents = []string{AgentClaude, AgentQwen}

// AgentClaudeBG starts a Claude Code background agent (claude --bg), run
// by Claude Code's own daemon rather than the gateway.
const AgentClaudeBG = "claude-bg"

// StartAgents are what `gateway run` and POST /v1/local/sessions take.
var StartAgents = []string{AgentClaude, AgentQwen, AgentClaudeBG}

// StartSpec asks for a hosted session: which CLI, where, under what name,
// its first prompt, and the permission mode and model it starts with
// (empty: the CLI's own defaults).
type StartSpec struct {
	Agent          string `json:"agent"`
	Cwd            string `json:"cwd"`
	Name           string `json:"name,omitempty"`
	Prompt         string `json:"prompt,omitempty"`
	PermissionMode string `json:"permission_mode,omitempty"`
	Model          string `json:"model,omitempty"`
}

// Errors of starting and stopping hosted sessions.
var (
	// ErrNoStarter: no leg starts sessions (the hosted leg is off).
	ErrNoStarter = errors.New("this gateway starts no sessions (serve without --legs hosted?)")
	// ErrTooManyHosted: --max-hosted sessions run already.
	ErrTooManyHosted = errors.New("as many hosted sessions as --max-hosted allows are running")
	// ErrBadStart: the spec cannot be started as given (an unknown agent,
	// a cwd that is not the user's directory, a name taken).
	ErrBadStart = errors.New("cannot start that session")
	// ErrAgentMissing: the agent's CLI is not installed where the gateway
	// looks.
	ErrAgentMissing = errors.New("the agent's CLI is not installed")
	// ErrNotStarted: a stop of a session the gateway did not start.
	ErrNotStarted = errors.New("not a hosted session")
)
