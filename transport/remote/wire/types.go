package remotews

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxLine is the default cap on one NDJSON line or SSE line, terminator
// excluded: 8 MiB. Tool results carry whole files, so the cap is generous, but
// a peer that never sends a newline must not make us buffer without end.
const MaxLine = 8 << 20

// maxContentDepth caps tool_result content nested inside tool_result content.
// Each level is decoded by its own json.Unmarshal, which would otherwise let a
// deep line cost time quadratic in its length.
const maxContentDepth = 4

// Decoding errors. Decode and the readers wrap them; callers match with errors.Is.
var (
	// ErrLineTooLong: a line exceeded the reader's cap (MaxLine by default).
	ErrLineTooLong = errors.New("remotews: line too long")
	// ErrSyntax: the line is not valid JSON.
	ErrSyntax = errors.New("remotews: invalid JSON")
	// ErrNotObject: the line is JSON but not an object.
	ErrNotObject = errors.New("remotews: message is not a JSON object")
	// ErrNoType: the object has no "type", so it cannot be routed.
	ErrNoType = errors.New("remotews: message has no type")
	// ErrField: a known message or block has a field of the wrong shape.
	ErrField = errors.New("remotews: malformed field")
	// ErrEventTooLarge: an SSE event's data grew past the reader's cap.
	ErrEventTooLarge = errors.New("remotews: event too large")
	// ErrNoSequence: a v2 event carries no usable sequence number.
	ErrNoSequence = errors.New("remotews: event has no sequence number")
)

// LineError locates a decoding error in a stream. The stream itself is still
// usable: NDJSONReader.Next may be called again.
type LineError struct {
	Line int // 1-based, counting blank lines
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Kind is a message's type.
type Kind uint8

const (
	KindUnknown Kind = iota // a type this package does not know; see Message.Raw
	KindKeepAlive
	KindAssistant
	KindUser
	KindResult
	KindSystem
	KindControlRequest
	KindControlResponse
	KindControlCancelRequest
)

var kindWire = [...]string{
	KindUnknown: "unknown", KindKeepAlive: "keep_alive", KindAssistant: "assistant",
	KindUser: "user", KindResult: "result", KindSystem: "system",
	KindControlRequest: "control_request", KindControlResponse: "control_response",
	KindControlCancelRequest: "control_cancel_request",
}

func (k Kind) String() string { return kindWire[k] }

// BlockKind is a content block's type.
type BlockKind uint8

const (
	BlockUnknown BlockKind = iota // see Block.Raw
	BlockText
	BlockToolUse
	BlockToolResult
	BlockThinking
	BlockToolReference
)

var blockWire = [...]string{
	BlockUnknown: "unknown", BlockText: "text", BlockToolUse: "tool_use",
	BlockToolResult: "tool_result", BlockThinking: "thinking", BlockToolReference: "tool_reference",
}

func (k BlockKind) String() string { return blockWire[k] }

// Subtype is a control_request's request.subtype (seed 001's table).
type Subtype uint8

const (
	SubtypeUnknown Subtype = iota // see ControlRequest.Raw
	SubtypeInitialize
	SubtypeInterrupt
	SubtypeSetPermissionMode
	SubtypeSetModel
	SubtypeSetMaxThinkingTokens
	SubtypeMCPStatus
	SubtypeCanUseTool
	SubtypeHookCallback
	SubtypeMCPMessage
)

var subtypeWire = [...]string{
	SubtypeUnknown: "unknown", SubtypeInitialize: "initialize", SubtypeInterrupt: "interrupt",
	SubtypeSetPermissionMode: "set_permission_mode", SubtypeSetModel: "set_model",
	SubtypeSetMaxThinkingTokens: "set_max_thinking_tokens", SubtypeMCPStatus: "mcp_status",
	SubtypeCanUseTool: "can_use_tool", SubtypeHookCallback: "hook_callback", SubtypeMCPMessage: "mcp_message",
}

func (s Subtype) String() string { return subtypeWire[s] }

// lookup maps a wire spelling back to its value; unknown spellings give 0.
func lookup[T ~uint8](table []string, s string) T {
	for i, w := range table {
		if i > 0 && w == s {
			return T(i)
		}
	}
	return 0
}

// Message is one decoded NDJSON line. Exactly one of the kind-specific
// pointers is set for a known Kind; for KindUnknown and KindKeepAlive none is.
// Raw always holds the whole line, so nothing the server said is lost.
type Message struct {
	Kind      Kind
	Type      string // the wire "type" as received, also for unknown kinds
	UUID      string
	SessionID string
	CreatedAt string // kept as sent; the seed shows RFC 3339 but never promises it
	// ParentToolUseID is set on subagent traffic; "" when null or absent.
	ParentToolUseID string

	Assistant       *Assistant
	User            *User
	Result          *Result
	System          *System
	ControlRequest  *ControlRequest
	ControlResponse *ControlResponse
	Cancel          *Cancel

	Raw json.RawMessage
}

// Assistant is a Messages-API message the model is writing. The server resends
// the same ID as it streams; MergeAssistant folds the copies together.
type Assistant struct {
	ID           string
	Model        string
	Role         string
	Content      Content
	StopReason   string // "" while streaming (null)
	StopSequence string
	Usage        *Usage
}

// User is a user turn: a prompt or tool results.
type User struct {
	Role            string
	Content         Content
	FileAttachments []FileAttachment
	// ToolUseResult is per-tool metadata (answers for AskUserQuestion,
	// backgroundTaskId for Bash, ...); its shape varies by tool, so it stays raw.
	ToolUseResult json.RawMessage
}

// FileAttachment is a file the web client attached to a user message.
type FileAttachment struct {
	FileName    string `json:"file_name"`
	FileType    string `json:"file_type"`
	FileContent string `json:"file_content"`
}

// Result summarises a finished agent turn.
type Result struct {
	Subtype           string
	Result            string
	DurationMS        float64
	DurationAPIMS     float64
	NumTurns          int
	TotalCostUSD      float64
	IsError           bool
	StopReason        string
	ModelUsage        json.RawMessage // keyed by model name; shape not in the seed
	PermissionDenials json.RawMessage // shape not in the seed
	Usage             *Usage
}

// System is a system message. Seed 001 does not describe it; the v2 event
// stream carries it with a subtype (init, hook_started, compact_boundary, ...).
type System struct {
	Subtype string
}

// Usage is token accounting, updated as a message streams.
type Usage struct {
	InputTokens              int64  `json:"input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
	CacheCreation            *Cache `json:"cache_creation"`
	InferenceGeo             string `json:"inference_geo"`
	ServiceTier              string `json:"service_tier"`
	Speed                    string `json:"speed"`
}

// Cache splits cache-creation tokens by lifetime.
type Cache struct {
	Ephemeral1hInputTokens int64 `json:"ephemeral_1h_input_tokens"`
	Ephemeral5mInputTokens int64 `json:"ephemeral_5m_input_tokens"`
}

// Content is a message's or tool result's content: either a plain string
// (String is true and Blocks holds one text block) or a list of blocks.
type Content struct {
	Blocks []Block
	String bool
}

// Text joins the text blocks, for display.
func (c Content) Text() string {
	var b bytes.Buffer
	for _, bl := range c.Blocks {
		if bl.Kind == BlockText {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// Block is one content block. Fields not belonging to Kind are empty; Raw
// always holds the block as sent.
type Block struct {
	Kind BlockKind
	Type string // the wire "type" as received

	Text string // text

	ID         string          // tool_use
	Name       string          // tool_use
	Input      json.RawMessage // tool_use
	CallerType string          // tool_use: caller.type, "direct" in the seed

	ToolUseID string   // tool_result
	Content   *Content // tool_result; nil when absent
	IsError   bool     // tool_result

	Thinking  string // thinking; often empty, only the signature is sent
	Signature string // thinking; opaque, encrypted

	ToolName string // tool_reference

	Raw json.RawMessage
}

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
	PermissionSuggestions json.RawMessage // not in seed 001; kept raw when sent
	BlockedPath           string          // not in seed 001; decoded when sent

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

// PermissionUpdate changes permission rules: replaceRules, addRules or setMode.
type PermissionUpdate struct {
	Type        string `json:"type"`
	Rules       []Rule `json:"rules,omitempty"`
	Behavior    string `json:"behavior,omitempty"`
	Destination string `json:"destination,omitempty"`
	Mode        string `json:"mode,omitempty"`
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

// Decode decodes one NDJSON line. Surrounding whitespace (and a trailing
// "\r\n") is ignored; a line longer than MaxLine is refused with
// ErrLineTooLong before it is parsed.
func Decode(line []byte) (Message, error) {
	if len(line) > MaxLine {
		return Message{}, fmt.Errorf("%w: %d bytes, cap %d", ErrLineTooLong, len(line), MaxLine)
	}
	return decodeObject(trimJSONSpace(line), "")
}

// envelope holds every top-level field any known message uses; the parts
// whose shape depends on the type stay raw until the type is known.
type envelope struct {
	Type            string          `json:"type"`
	UUID            string          `json:"uuid"`
	SessionID       string          `json:"session_id"`
	CreatedAt       string          `json:"created_at"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	Message         json.RawMessage `json:"message"`
	FileAttachments json.RawMessage `json:"file_attachments"`
	ToolUseResult   json.RawMessage `json:"tool_use_result"`
	RequestID       string          `json:"request_id"`
	Request         json.RawMessage `json:"request"`
	Response        json.RawMessage `json:"response"`
	Subtype         string          `json:"subtype"`

	// result
	Result            string          `json:"result"`
	DurationMS        float64         `json:"duration_ms"`
	DurationAPIMS     float64         `json:"duration_api_ms"`
	NumTurns          int             `json:"num_turns"`
	TotalCostUSD      float64         `json:"total_cost_usd"`
	IsError           bool            `json:"is_error"`
	StopReason        *string         `json:"stop_reason"`
	ModelUsage        json.RawMessage `json:"modelUsage"`
	PermissionDenials json.RawMessage `json:"permission_denials"`
	Usage             *Usage          `json:"usage"`
}

// decodeObject decodes a message object. defaultType stands in for a missing
// "type" (the v2 stream names the type outside its payload).
func decodeObject(raw []byte, defaultType string) (Message, error) {
	if len(raw) == 0 || raw[0] != '{' {
		if !json.Valid(raw) {
			return Message{}, ErrSyntax
		}
		return Message{}, ErrNotObject
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return Message{}, classify(err, "message")
	}
	if env.Type == "" {
		env.Type = defaultType
	}
	if env.Type == "" {
		return Message{}, ErrNoType
	}
	m := Message{
		Kind:      lookup[Kind](kindWire[:], env.Type),
		Type:      env.Type,
		UUID:      env.UUID,
		SessionID: env.SessionID,
		CreatedAt: env.CreatedAt,
		Raw:       bytes.Clone(raw),
	}
	if env.ParentToolUseID != nil {
		m.ParentToolUseID = *env.ParentToolUseID
	}
	var err error
	switch m.Kind {
	case KindAssistant:
		m.Assistant, err = decodeAssistant(env.Message)
	case KindUser:
		m.User, err = decodeUser(&env)
	case KindResult:
		m.Result = &Result{
			Subtype: env.Subtype, Result: env.Result, DurationMS: env.DurationMS,
			DurationAPIMS: env.DurationAPIMS, NumTurns: env.NumTurns, TotalCostUSD: env.TotalCostUSD,
			IsError: env.IsError, StopReason: deref(env.StopReason), ModelUsage: env.ModelUsage,
			PermissionDenials: env.PermissionDenials, Usage: env.Usage,
		}
	case KindSystem:
		m.System = &System{Subtype: env.Subtype}
	case KindControlRequest:
		m.ControlRequest, err = decodeRequest(env.RequestID, env.Request)
	case KindControlResponse:
		m.ControlResponse, err = decodeResponse(env.Response)
	case KindControlCancelRequest:
		m.Cancel = &Cancel{RequestID: env.RequestID}
	}
	if err != nil {
		return Message{}, fmt.Errorf("%s: %w", m.Type, err)
	}
	return m, nil
}

// classify turns a json error into one of ours, keeping the detail.
func classify(err error, what string) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return fmt.Errorf("%w: %s: %v", ErrField, what, err)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

func decodeAssistant(raw json.RawMessage) (*Assistant, error) {
	var w struct {
		ID           string          `json:"id"`
		Model        string          `json:"model"`
		Role         string          `json:"role"`
		Content      json.RawMessage `json:"content"`
		StopReason   *string         `json:"stop_reason"`
		StopSequence *string         `json:"stop_sequence"`
		Usage        *Usage          `json:"usage"`
	}
	if isNull(raw) {
		return &Assistant{}, nil
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, classify(err, "message")
	}
	c, err := decodeContent(w.Content, 0)
	if err != nil {
		return nil, err
	}
	return &Assistant{
		ID: w.ID, Model: w.Model, Role: w.Role, Content: c,
		StopReason: deref(w.StopReason), StopSequence: deref(w.StopSequence), Usage: w.Usage,
	}, nil
}

func decodeUser(env *envelope) (*User, error) {
	u := &User{ToolUseResult: env.ToolUseResult}
	if !isNull(env.FileAttachments) {
		if err := json.Unmarshal(env.FileAttachments, &u.FileAttachments); err != nil {
			return nil, classify(err, "file_attachments")
		}
	}
	if isNull(env.Message) {
		return u, nil
	}
	var w struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(env.Message, &w); err != nil {
		return nil, classify(err, "message")
	}
	c, err := decodeContent(w.Content, 0)
	if err != nil {
		return nil, err
	}
	u.Role, u.Content = w.Role, c
	return u, nil
}

// decodeContent decodes a string or a list of blocks.
func decodeContent(raw json.RawMessage, depth int) (Content, error) {
	if isNull(raw) {
		return Content{}, nil
	}
	if depth > maxContentDepth {
		return Content{}, fmt.Errorf("%w: content nested deeper than %d", ErrField, maxContentDepth)
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Content{}, classify(err, "content")
		}
		return Content{String: true, Blocks: []Block{{Kind: BlockText, Type: "text", Text: s, Raw: textBlock(s)}}}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return Content{}, classify(err, "content")
	}
	c := Content{Blocks: make([]Block, 0, len(items))}
	for i, it := range items {
		b, err := decodeBlock(it, depth)
		if err != nil {
			return Content{}, fmt.Errorf("content[%d]: %w", i, err)
		}
		c.Blocks = append(c.Blocks, b)
	}
	return c, nil
}

// textBlock is the block form of plain-string content, so Raw is never empty.
func textBlock(s string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", s})
	return b
}

func decodeBlock(raw json.RawMessage, depth int) (Block, error) {
	var w struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		Caller    json.RawMessage `json:"caller"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		ToolName  string          `json:"tool_name"`
	}
	if len(raw) == 0 || raw[0] != '{' {
		return Block{}, fmt.Errorf("%w: block is not an object", ErrField)
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return Block{}, classify(err, "block")
	}
	b := Block{Kind: lookup[BlockKind](blockWire[:], w.Type), Type: w.Type, Raw: raw}
	switch b.Kind {
	case BlockText:
		b.Text = w.Text
	case BlockToolUse:
		b.ID, b.Name, b.Input = w.ID, w.Name, w.Input
		if !isNull(w.Caller) {
			var c struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(w.Caller, &c); err != nil {
				return Block{}, classify(err, "caller")
			}
			b.CallerType = c.Type
		}
	case BlockToolResult:
		b.ToolUseID, b.IsError = w.ToolUseID, w.IsError
		if !isNull(w.Content) {
			c, err := decodeContent(w.Content, depth+1)
			if err != nil {
				return Block{}, err
			}
			b.Content = &c
		}
	case BlockThinking:
		b.Thinking, b.Signature = w.Thinking, w.Signature
	case BlockToolReference:
		b.ToolName = w.ToolName
	}
	return b, nil
}

// requestWire holds every field any known control request subtype uses.
type requestWire struct {
	Subtype               string          `json:"subtype"`
	RequestID             string          `json:"request_id"`
	ToolName              string          `json:"tool_name"`
	ToolUseID             string          `json:"tool_use_id"`
	Description           string          `json:"description"`
	Input                 json.RawMessage `json:"input"`
	PermissionSuggestions json.RawMessage `json:"permission_suggestions"`
	BlockedPath           *string         `json:"blocked_path"`
	Mode                  string          `json:"mode"`
	Model                 *string         `json:"model"`
	MaxThinkingTokens     *int64          `json:"max_thinking_tokens"`
	Hooks                 json.RawMessage `json:"hooks"`
	SDKMCPServers         []string        `json:"sdkMcpServers"`
	ServerName            string          `json:"server_name"`
	Message               json.RawMessage `json:"message"`
	CallbackID            string          `json:"callback_id"`
}

// decodeRequest decodes a control_request's "request" object. requestID is
// the envelope's; an id inside the request is used when the envelope has none
// (seen nowhere, but pending_permission_requests leaves the shape open).
func decodeRequest(requestID string, raw json.RawMessage) (*ControlRequest, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("%w: control_request has no request", ErrField)
	}
	var w requestWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, classify(err, "request")
	}
	if requestID == "" {
		requestID = w.RequestID
	}
	r := &ControlRequest{
		RequestID: requestID, Subtype: lookup[Subtype](subtypeWire[:], w.Subtype),
		SubtypeRaw: w.Subtype, Raw: raw,
	}
	switch r.Subtype {
	case SubtypeCanUseTool:
		r.ToolName, r.ToolUseID, r.Description, r.Input = w.ToolName, w.ToolUseID, w.Description, w.Input
		r.PermissionSuggestions, r.BlockedPath = w.PermissionSuggestions, deref(w.BlockedPath)
	case SubtypeSetPermissionMode:
		r.Mode = w.Mode
	case SubtypeSetModel:
		r.Model = deref(w.Model)
	case SubtypeSetMaxThinkingTokens:
		r.MaxThinkingTokens = w.MaxThinkingTokens
	case SubtypeInitialize:
		r.Hooks, r.SDKMCPServers = w.Hooks, w.SDKMCPServers
	case SubtypeMCPMessage:
		r.ServerName, r.MCPMessage = w.ServerName, w.Message
	case SubtypeHookCallback:
		r.CallbackID = w.CallbackID
	}
	return r, nil
}

func decodeResponse(raw json.RawMessage) (*ControlResponse, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("%w: control_response has no response", ErrField)
	}
	var w struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Error     string          `json:"error"`
		Response  json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, classify(err, "response")
	}
	r := &ControlResponse{Subtype: w.Subtype, RequestID: w.RequestID, Error: w.Error, Response: w.Response}
	if isNull(w.Response) {
		return r, nil
	}
	if w.Response[0] != '{' {
		return nil, fmt.Errorf("%w: response.response is not an object", ErrField)
	}
	var inner struct {
		Behavior    *string           `json:"behavior"`
		Pending     []json.RawMessage `json:"pending_permission_requests"`
		MCPResponse json.RawMessage   `json:"mcp_response"`
		Commands    json.RawMessage   `json:"commands"`
		Models      json.RawMessage   `json:"models"`
		Account     json.RawMessage   `json:"account"`
		PID         json.RawMessage   `json:"pid"`
	}
	if err := json.Unmarshal(w.Response, &inner); err != nil {
		return nil, classify(err, "response.response")
	}
	if inner.Behavior != nil {
		r.Decision = new(Decision)
		if err := json.Unmarshal(w.Response, r.Decision); err != nil {
			return nil, classify(err, "permission decision")
		}
	}
	if inner.Commands != nil || inner.Models != nil || inner.Account != nil || inner.PID != nil {
		r.Initialize = new(InitializeResponse)
		if err := json.Unmarshal(w.Response, r.Initialize); err != nil {
			return nil, classify(err, "initialize response")
		}
	}
	r.MCPResponse = inner.MCPResponse
	for i, p := range inner.Pending {
		req, err := decodePending(p)
		if err != nil {
			return nil, fmt.Errorf("pending_permission_requests[%d]: %w", i, err)
		}
		r.Pending = append(r.Pending, *req)
	}
	return r, nil
}

// decodePending takes a pending permission request in either shape the seed
// allows: a whole control_request message ({"type","request_id","request"})
// or a bare request object with its own request_id.
func decodePending(raw json.RawMessage) (*ControlRequest, error) {
	var w struct {
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%w: pending request is not an object", ErrField)
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, classify(err, "pending request")
	}
	if !isNull(w.Request) {
		return decodeRequest(w.RequestID, w.Request)
	}
	return decodeRequest("", raw)
}

// MergeAssistant folds a streamed copy of an assistant message into the copy
// seen so far under the same message ID. Seed 001 says each copy "replaces the
// previous content for that block type": a block replaces the earlier block of
// its type (tool_use blocks match by ID instead, so parallel tool calls both
// stay), new blocks are appended in order, and stop reason and usage come from
// next. Copies with different IDs are not merged: next is returned.
func MergeAssistant(prev, next Assistant) Assistant {
	if prev.ID != next.ID {
		return next
	}
	out := next
	blocks := append([]Block(nil), prev.Content.Blocks...)
	for _, nb := range next.Content.Blocks {
		i := slotFor(blocks, nb)
		if i < 0 {
			blocks = append(blocks, nb)
		} else {
			blocks[i] = nb
		}
	}
	out.Content = Content{Blocks: blocks}
	if out.Usage == nil {
		out.Usage = prev.Usage
	}
	return out
}

func slotFor(blocks []Block, nb Block) int {
	for i, b := range blocks {
		if b.Type != nb.Type {
			continue
		}
		if nb.Kind == BlockToolUse && b.ID != nb.ID {
			continue
		}
		return i
	}
	return -1
}

// NDJSONReader reads newline-delimited messages from a WebSocket message or
// any other stream. Decoding errors are per line (a *LineError) and the next
// call continues with the next line; read errors from the source end the
// stream and are returned as they are.
type NDJSONReader struct {
	br      *bufio.Reader
	max     int
	line    int
	buf     []byte
	readErr error
}

// NewNDJSONReader reads from r, refusing lines longer than maxLine bytes
// (MaxLine when maxLine <= 0).
func NewNDJSONReader(r io.Reader, maxLine int) *NDJSONReader {
	if maxLine <= 0 {
		maxLine = MaxLine
	}
	return &NDJSONReader{br: bufio.NewReaderSize(r, readBuf), max: maxLine}
}

// Next returns the next message, skipping blank lines. It returns io.EOF at
// the end; a last line without "\n" is still decoded.
func (r *NDJSONReader) Next() (Message, error) {
	for {
		if r.readErr != nil {
			return Message{}, r.readErr
		}
		line, tooLong := r.readLine()
		if len(line) == 0 && !tooLong && r.readErr != nil {
			return Message{}, r.readErr
		}
		r.line++
		if tooLong {
			return Message{}, &LineError{Line: r.line, Err: fmt.Errorf("%w: cap %d", ErrLineTooLong, r.max)}
		}
		line = trimJSONSpace(line)
		if len(line) == 0 {
			continue
		}
		m, err := decodeObject(line, "")
		if err != nil {
			return Message{}, &LineError{Line: r.line, Err: err}
		}
		return m, nil
	}
}

// readLine returns the next line without its "\n". A line over the cap is
// read to its end and discarded, so the stream stays in step.
func (r *NDJSONReader) readLine() (line []byte, tooLong bool) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !tooLong {
			r.buf = append(r.buf, chunk...)
			if n := len(bytes.TrimSuffix(r.buf, []byte("\n"))); n > r.max {
				tooLong, r.buf = true, r.buf[:0]
			}
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(r.buf, []byte("\n")), tooLong
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			r.readErr = err
			return r.buf, tooLong
		}
	}
}

// trimJSONSpace trims the whitespace JSON allows, and no other.
func trimJSONSpace(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }
