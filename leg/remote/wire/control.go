package wire

import (
	"encoding/json"
	"fmt"
)

// ControlRequest asks the other side to act: permissions, initialisation,
// interrupts, MCP forwarding. Which fields are set depends on Subtype; Raw is
// the whole "request" object.
type ControlRequest struct {
	RequestID  string
	Subtype    Subtype
	SubtypeRaw string // the wire subtype, also for unknown ones

	// can_use_tool
	ToolName              string
	ToolUseID             string
	Description           string
	Input                 json.RawMessage
	PermissionSuggestions json.RawMessage // not in the web app's traffic; kept raw when sent
	BlockedPath           string          // not in the web app's traffic; decoded when sent

	Mode              string          // set_permission_mode
	Model             string          // set_model
	MaxThinkingTokens *int64          // set_max_thinking_tokens; nil means unset (null)
	Hooks             json.RawMessage // initialize (SDK clients)
	SDKMCPServers     []string        // initialize (SDK clients)
	ServerName        string          // mcp_message
	MCPMessage        json.RawMessage // mcp_message: a JSON-RPC message
	CallbackID        string          // hook_callback; field name is a guess, see Raw

	Raw json.RawMessage
}

// Question is one AskUserQuestion question from a can_use_tool input.
type Question struct {
	Question    string   `json:"question"`
	Header      string   `json:"header"`
	MultiSelect bool     `json:"multiSelect"`
	Options     []Option `json:"options"`
}

// Option is one choice of a Question.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Preview     string `json:"preview"`
}

// Questions decodes an AskUserQuestion prompt's questions; it returns nil for
// other tools.
func (r *ControlRequest) Questions() ([]Question, error) {
	if r.ToolName != "AskUserQuestion" || len(r.Input) == 0 {
		return nil, nil
	}
	var in struct {
		Questions []Question `json:"questions"`
	}
	if err := json.Unmarshal(r.Input, &in); err != nil {
		return nil, fmt.Errorf("%w: AskUserQuestion input: %v", ErrField, err)
	}
	return in.Questions, nil
}

// ControlResponse answers a control_request. Success carries Response (raw)
// and, where recognised, its decoded forms; error carries Error.
type ControlResponse struct {
	Subtype   string // "success" or "error"
	RequestID string
	Error     string
	Response  json.RawMessage

	// Decision is set when Response is a permission answer (has "behavior").
	Decision *Decision
	// Initialize is set when Response answers initialize (has "commands",
	// "models", "account" or "pid").
	Initialize *InitializeResponse
	// Pending are the can_use_tool prompts the server still waits on, sent in
	// a success response (the initialize answer, on connect and reconnect).
	Pending []ControlRequest
	// MCPResponse is the JSON-RPC answer to an mcp_message.
	MCPResponse json.RawMessage
}

// Decision is a permission answer: allow or deny a can_use_tool prompt.
type Decision struct {
	Behavior           string             `json:"behavior"` // "allow" or "deny"
	UpdatedInput       json.RawMessage    `json:"updatedInput,omitempty"`
	ToolUseID          string             `json:"toolUseID,omitempty"`
	Message            string             `json:"message,omitempty"`
	UpdatedPermissions []PermissionUpdate `json:"updatedPermissions,omitempty"`
}

// PermissionUpdate changes permissions: addRules, replaceRules,
// removeRules, setMode, addDirectories or removeDirectories.
type PermissionUpdate struct {
	Type        string   `json:"type"`
	Rules       []Rule   `json:"rules,omitempty"`
	Behavior    string   `json:"behavior,omitempty"`
	Destination string   `json:"destination,omitempty"`
	Mode        string   `json:"mode,omitempty"`
	Directories []string `json:"directories,omitempty"`
}

// Rule is one permission rule.
type Rule struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

// InitializeResponse answers initialize.
type InitializeResponse struct {
	Account               json.RawMessage `json:"account"`
	AvailableOutputStyles []string        `json:"available_output_styles"`
	Commands              json.RawMessage `json:"commands"`
	Models                json.RawMessage `json:"models"`
	OutputStyle           string          `json:"output_style"`
	PID                   int64           `json:"pid"`
}

// Cancel withdraws a pending control request (a permission prompt).
type Cancel struct {
	RequestID string
}
