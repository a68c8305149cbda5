package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

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
	if m, ok := decodeFast(bytes.Clone(raw), "", defaultType); ok {
		return m, nil
	}
	return decodeSlow(raw, defaultType)
}

// decodeSlow is decodeObject with encoding/json, part by part: the
// reference the fast path gives way to when in doubt.
func decodeSlow(raw []byte, defaultType string) (Message, error) {
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

// UUIDOf digs the uuid out of an event that may not decode as a whole.
func UUIDOf(raw json.RawMessage) string {
	var v struct {
		UUID string `json:"uuid"`
	}
	_ = json.Unmarshal(raw, &v)
	return v.UUID
}
