package message

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// PermissionState is where a permission prompt stands.
type PermissionState string

const (
	PermissionPending   PermissionState = "pending"   // waiting for an answer
	PermissionAnswered  PermissionState = "answered"  // answered here and accepted by the server
	PermissionCancelled PermissionState = "cancelled" // withdrawn by the session (control_cancel_request)
)

// Behavior is a permission answer's verdict, in the wire's spelling.
type Behavior string

const (
	BehaviorAllow Behavior = "allow"
	BehaviorDeny  Behavior = "deny"
)

// PromptSource is where a prompt came from: a remote session's stream, a
// local Claude Code session's PermissionRequest hook, or an MCP channel's
// permission relay.
type PromptSource string

const (
	SourceRemote  PromptSource = "remote"  // a claude.ai remote session's can_use_tool
	SourceHook    PromptSource = "hook"    // a local session's PermissionRequest hook
	SourceChannel PromptSource = "channel" // notifications/claude/channel/permission_request
	SourceHosted  PromptSource = "hosted"  // a CLI the gateway started: its can_use_tool over stdio
)

// PermissionRequest is a session's tool call (AskUserQuestion and
// ExitPlanMode included) that waits for someone to allow or deny it: a
// remote session's can_use_tool prompt, or a local session's, reported by
// its hook or its channel.
type PermissionRequest struct {
	// ID is the gateway's short id for the prompt, stable across reconnects:
	// the one `gateway allow ID` takes.
	ID        string   `json:"id"`
	SessionID string   `json:"session_id"` // the session's own id
	Address   string   `json:"address"`    // as `gateway sessions` shows it (bridge:<session id> for a remote one)
	Leg       Protocol `json:"leg"`
	// Source says how the prompt reached the gateway; empty is remote.
	Source PromptSource `json:"source"`
	// Name is the session's name as `gateway sessions` shows it, when it
	// has one.
	Name string `json:"name,omitempty"`
	// Host is the federation host the prompt is pending on, when
	// federation is on (this host's own prompts carry its name). A prompt
	// of another host is listed with Leg federation; its answer travels
	// to that host.
	Host string `json:"host,omitempty"`
	// RequestID is the control_request's request_id; the answer echoes it.
	RequestID string `json:"request_id"`
	ToolName  string `json:"tool_name"`
	// Kind is what the prompt asks for, Verbs the verbs that answer it
	// (the usual one first): `allow` on a question would answer nothing.
	Kind        PromptKind      `json:"kind"`
	Verbs       []string        `json:"verbs"`
	ToolUseID   string          `json:"tool_use_id,omitempty"`
	Description string          `json:"description,omitempty"`
	Input       json.RawMessage `json:"input"`
	// Questions are AskUserQuestion's questions, decoded from Input.
	Questions []Question `json:"questions,omitempty"`
	// Suggestions are the permission updates the session offers with the
	// prompt (permission_suggestions), such as "always allow this command";
	// an allow picks them by number, from 1.
	Suggestions []PermissionUpdate `json:"suggestions,omitempty"`
	Created     time.Time          `json:"created_at"`
	State       PermissionState    `json:"state"`
	Answer      *PermissionAnswer  `json:"answer,omitempty"`
	// AnsweredBy is who settled the prompt (Answer.By, or "terminal" for
	// one answered at the session itself), set once it is settled.
	AnsweredBy string `json:"answered_by,omitempty"`
}

// Question is one AskUserQuestion question.
type Question struct {
	Question    string   `json:"question"`
	Header      string   `json:"header,omitempty"`
	MultiSelect bool     `json:"multi_select"`
	Options     []string `json:"options"` // the labels
}

// MarshalJSON writes a question without options with "options": [], never
// null: a client walks the list (a session may ask with none).
func (q Question) MarshalJSON() ([]byte, error) {
	type plain Question
	if q.Options == nil {
		q.Options = []string{}
	}
	return json.Marshal(plain(q))
}

// PermissionRule is one rule an answer adds (`--rule 'Bash(go test)'`).
type PermissionRule struct {
	ToolName    string `json:"tool_name"`
	RuleContent string `json:"rule_content,omitempty"`
}

// PermissionAnswer answers a PermissionRequest. The remote leg turns it into
// a control_response with behavior, updatedInput, toolUseID, message and
// updatedPermissions.
type PermissionAnswer struct {
	Behavior Behavior `json:"behavior"`
	// UpdatedInput replaces the tool input (allow only); nil keeps it.
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	// Answers are AskUserQuestion selections by question text. A
	// single-select question takes exactly one label and goes out as a
	// string; a multi-select one goes out as a list.
	Answers map[string][]string `json:"answers,omitempty"`
	// Message is the reason given to the model (deny).
	Message string `json:"message,omitempty"`
	// Rules go out as one addRules permission update with this answer's
	// behavior; RuleDestination defaults to "localSettings".
	Rules           []PermissionRule `json:"rules,omitempty"`
	RuleDestination string           `json:"rule_destination,omitempty"`
	// Suggestions pick the prompt's Suggestions by number (from 1); each
	// goes out as it was offered, in updatedPermissions (allow only).
	Suggestions []int `json:"suggestions,omitempty"`
	// Mode switches the session's permission mode in the same answer (a
	// setMode update for the session), as approving a plan does in
	// claude.ai: one of PermissionModes (allow only).
	Mode string `json:"mode,omitempty"`
	// By says who answered: the API's caller ("token:ID", "console:ID",
	// "socket:cli"), "notification", an approver or MCP session's address,
	// "terminal", "remote".
	By string `json:"by,omitempty"`
}

// ControlKind is a control request the gateway can send a remote session.
type ControlKind string

const (
	ControlInterrupt         ControlKind = "interrupt"
	ControlSetPermissionMode ControlKind = "set_permission_mode"
	ControlSetModel          ControlKind = "set_model"
)

// Control asks a remote session to act.
type Control struct {
	Kind  ControlKind `json:"kind"`
	Mode  string      `json:"mode,omitempty"`  // set_permission_mode: default, plan, acceptEdits, bypassPermissions
	Model string      `json:"model,omitempty"` // set_model; empty asks for the default model
}

// RemoteEvent is one event of a followed remote session, decoded enough to
// show and route; Raw keeps it whole.
type RemoteEvent struct {
	SessionID string `json:"session_id"`
	Address   string `json:"address"` // bridge:<session id>
	// Kind is the event's type: user, assistant, result, system,
	// control_request, control_response, control_cancel_request, or one the
	// gateway does not know (kept raw).
	Kind string `json:"kind"`
	UUID string `json:"uuid,omitempty"`
	Seq  uint64 `json:"seq,omitempty"` // v2 stream sequence number
	// MessageID groups the streamed copies of one assistant message; Final
	// says this copy has a stop_reason (or is a result).
	MessageID string `json:"message_id,omitempty"`
	Final     bool   `json:"final,omitempty"`
	// Text is the event's text for display: the assistant message's text
	// blocks so far, a user prompt, a result's result.
	Text string `json:"text,omitempty"`
	// Control is set on control_request and control_response events.
	Control *RemoteControl  `json:"control,omitempty"`
	Raw     json.RawMessage `json:"raw,omitempty"`
}

// ErrPromptSettled is matched by a *PromptSettledError.
var ErrPromptSettled = errors.New("the permission prompt was already settled at its session")

// PromptSettledError is a leg's refusal to carry an answer to a prompt it
// already saw settled by someone else (an answer from the web, a withdrawal):
// the session holds the first answer it got, so ours would be told it won
// when it lost. It does not know the router's id of the prompt: the router
// turns it into a *SettledError, which names it.
type PromptSettledError struct {
	State    PermissionState // PermissionAnswered or PermissionCancelled
	Behavior Behavior        // the answer's verdict, when answered
	By       string          // who answered, when answered
}

func (e *PromptSettledError) Error() string {
	if e.State == PermissionCancelled {
		return "the permission prompt was withdrawn by the session"
	}
	return fmt.Sprintf("the permission prompt was already answered (%s) by %s", e.Behavior, e.By)
}

// Is makes errors.Is(err, ErrPromptSettled) true.
func (e *PromptSettledError) Is(target error) bool { return target == ErrPromptSettled }
