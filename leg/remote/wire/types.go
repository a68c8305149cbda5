package wire

import (
	"bytes"
	"encoding/json"
)

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

// Subtype is a control_request's request.subtype
// (docs/protocols/claude-ai-remote.md#control-requests).
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

// FromClient says a client sends this subtype to the session (the "client"
// rows of docs/protocols/claude-ai-remote.md#control-requests): seen on the stream, it is a client's request (ours
// echoed, or the web app's), not one the session waits on us to answer.
func (s Subtype) FromClient() bool {
	switch s {
	case SubtypeInitialize, SubtypeInterrupt, SubtypeSetPermissionMode, SubtypeSetModel,
		SubtypeSetMaxThinkingTokens, SubtypeMCPStatus:
		return true
	}
	return false
}

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
	CreatedAt string // kept as sent; traffic shows RFC 3339 but nothing promises it
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
	ModelUsage        json.RawMessage // keyed by model name; shape not known
	PermissionDenials json.RawMessage // shape not known
	Usage             *Usage
}

// System is a system message. The web app's traffic does not show it; the v2 event
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
	CallerType string          // tool_use: caller.type, "direct" in captured traffic

	ToolUseID string   // tool_result
	Content   *Content // tool_result; nil when absent
	IsError   bool     // tool_result

	Thinking  string // thinking; often empty, only the signature is sent
	Signature string // thinking; opaque, encrypted

	ToolName string // tool_reference

	Raw json.RawMessage
}
