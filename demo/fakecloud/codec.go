package fakecloud

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The fake reads and writes the messages of
// docs/protocols/claude-ai-remote.md with this code of its own, written from
// that description and not shared with the client under test
// (leg/remote/wire), so that the two cannot agree on one mistake.
// It decodes only what a server needs: the type, the ids, the text of a
// user message, the fields of control requests and of permission answers.
// Everything else stays in Raw.

// maxLine caps one NDJSON line from a client: tool results carry whole
// files, but a line without end must not be buffered without end.
const maxLine = 8 << 20

// Message is one NDJSON message (a WebSocket line or a posted event) as the
// fake decoded it. At most one of User, ControlRequest and ControlResponse
// is set, after Type.
type Message struct {
	Type      string // the wire "type"
	UUID      string
	SessionID string
	// RequestID is the id of a control_request or control_cancel_request.
	RequestID string

	User            *User            // "user"
	ControlRequest  *ControlRequest  // "control_request"
	ControlResponse *ControlResponse // "control_response"

	Raw json.RawMessage // the whole message as received
}

// User is a user message: a prompt, or tool results.
type User struct {
	Content Content
	Files   []FileAttachment // file_attachments
}

// Content is a message's content: a plain string or a list of blocks; a string becomes one text block.
type Content struct {
	Blocks []Block
}

// Text joins the text blocks.
func (c Content) Text() string {
	var b strings.Builder
	for _, bl := range c.Blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// Block is one content block; Raw holds it whole.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`        // text
	ToolUseID string          `json:"tool_use_id"` // tool_result
	Raw       json.RawMessage `json:"-"`
}

// ControlRequest is a control_request's "request" object (its subtypes: initialize, interrupt, set_permission_mode, set_model,
// can_use_tool, ...).
type ControlRequest struct {
	RequestID   string          `json:"-"` // the message's request_id
	Subtype     string          `json:"subtype"`
	ToolName    string          `json:"tool_name"`   // can_use_tool
	ToolUseID   string          `json:"tool_use_id"` // can_use_tool
	Description string          `json:"description"` // can_use_tool
	Input       json.RawMessage `json:"input"`       // can_use_tool
	Mode        string          `json:"mode"`        // set_permission_mode
	Model       string          `json:"model"`       // set_model; "" when null or absent
	Raw         json.RawMessage `json:"-"`           // the whole request object
}

// ControlResponse is a control_response's "response" object.
type ControlResponse struct {
	Subtype   string // "success" or "error"
	RequestID string
	Error     string
	// Decision is set when the inner response is a permission answer (it
	// has "behavior").
	Decision *Decision
}

// Decision is a permission answer
// (docs/protocols/claude-ai-remote.md#permission-prompts-and-answers).
type Decision struct {
	Behavior           string            `json:"behavior"` // "allow" or "deny"
	UpdatedInput       json.RawMessage   `json:"updatedInput"`
	ToolUseID          string            `json:"toolUseID"`
	Message            string            `json:"message"`
	UpdatedPermissions []json.RawMessage `json:"updatedPermissions"`
}

// Question is one AskUserQuestion question.
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

// errMessage says why a line is not a message the fake accepts.
var errMessage = errors.New("not a message")

// decode decodes one message. It must be a JSON object with a string
// "type"; the fields the fake reads must have the documented shapes.
func decode(line []byte) (Message, error) {
	if len(line) > maxLine {
		return Message{}, fmt.Errorf("%w: %d bytes, cap %d", errMessage, len(line), maxLine)
	}
	line = bytes.Trim(line, " \t\r\n") // the whitespace JSON allows
	var w struct {
		Type      string          `json:"type"`
		UUID      string          `json:"uuid"`
		SessionID string          `json:"session_id"`
		RequestID string          `json:"request_id"`
		Message   json.RawMessage `json:"message"`
		Request   json.RawMessage `json:"request"`
		Response  json.RawMessage `json:"response"`
		Files     json.RawMessage `json:"file_attachments"`
	}
	if len(line) == 0 || line[0] != '{' {
		return Message{}, fmt.Errorf("%w: not a JSON object", errMessage)
	}
	if err := json.Unmarshal(line, &w); err != nil {
		return Message{}, fmt.Errorf("%w: %v", errMessage, err)
	}
	if w.Type == "" {
		return Message{}, fmt.Errorf("%w: no type", errMessage)
	}
	m := Message{Type: w.Type, UUID: w.UUID, SessionID: w.SessionID, RequestID: w.RequestID, Raw: bytes.Clone(line)}
	var err error
	switch w.Type {
	case "user":
		if m.User, err = decodeUser(w.Message); err == nil {
			m.User.Files, err = decodeFiles(w.Files)
		}
	case "control_request":
		m.ControlRequest, err = decodeRequest(w.RequestID, w.Request)
	case "control_response":
		m.ControlResponse, err = decodeResponse(w.Response)
	}
	if err != nil {
		return Message{}, fmt.Errorf("%w: %s: %v", errMessage, w.Type, err)
	}
	return m, nil
}

func absent(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// FileAttachment is one of a user message's file_attachments,
// its content decoded.
type FileAttachment struct {
	Name, Type string
	Content    []byte
}

// decodeFiles reads file_attachments: objects with a file_name, a
// file_type and a file_content in standard base64.
func decodeFiles(raw json.RawMessage) ([]FileAttachment, error) {
	if absent(raw) {
		return nil, nil
	}
	var fs []struct {
		Name    *string `json:"file_name"`
		Type    *string `json:"file_type"`
		Content *string `json:"file_content"`
	}
	if err := json.Unmarshal(raw, &fs); err != nil {
		return nil, fmt.Errorf("file_attachments: %v", err)
	}
	out := make([]FileAttachment, len(fs))
	for i, f := range fs {
		if f.Name == nil || f.Type == nil || f.Content == nil || *f.Name == "" {
			return nil, fmt.Errorf("file_attachments[%d]: want file_name, file_type and file_content", i)
		}
		b, err := base64.StdEncoding.DecodeString(*f.Content)
		if err != nil {
			return nil, fmt.Errorf("file_attachments[%d]: file_content is not base64: %v", i, err)
		}
		out[i] = FileAttachment{Name: *f.Name, Type: *f.Type, Content: b}
	}
	return out, nil
}

// decodeUser reads {"role":"user","content":"..." or [blocks]}.
func decodeUser(raw json.RawMessage) (*User, error) {
	u := &User{}
	if absent(raw) {
		return u, nil
	}
	var w struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("message: %v", err)
	}
	if absent(w.Content) {
		return u, nil
	}
	if w.Content[0] == '"' {
		var s string
		if err := json.Unmarshal(w.Content, &s); err != nil {
			return nil, fmt.Errorf("content: %v", err)
		}
		u.Content.Blocks = []Block{{Type: "text", Text: s}}
		return u, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(w.Content, &items); err != nil {
		return nil, fmt.Errorf("content: %v", err)
	}
	for i, it := range items {
		var b Block
		if len(it) == 0 || it[0] != '{' {
			return nil, fmt.Errorf("content[%d] is not an object", i)
		}
		if err := json.Unmarshal(it, &b); err != nil {
			return nil, fmt.Errorf("content[%d]: %v", i, err)
		}
		b.Raw = it
		u.Content.Blocks = append(u.Content.Blocks, b)
	}
	return u, nil
}

// decodeRequest reads a control_request's "request" object.
func decodeRequest(requestID string, raw json.RawMessage) (*ControlRequest, error) {
	if absent(raw) || raw[0] != '{' {
		return nil, errors.New("no request object")
	}
	r := &ControlRequest{}
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("request: %v", err)
	}
	r.RequestID, r.Raw = requestID, raw
	return r, nil
}

// decodeResponse reads a control_response's "response" object.
func decodeResponse(raw json.RawMessage) (*ControlResponse, error) {
	if absent(raw) || raw[0] != '{' {
		return nil, errors.New("no response object")
	}
	var w struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Error     string          `json:"error"`
		Response  json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("response: %v", err)
	}
	r := &ControlResponse{Subtype: w.Subtype, RequestID: w.RequestID, Error: w.Error}
	if absent(w.Response) {
		return r, nil
	}
	if w.Response[0] != '{' {
		return nil, errors.New("response.response is not an object")
	}
	var probe struct {
		Behavior *string `json:"behavior"`
	}
	if err := json.Unmarshal(w.Response, &probe); err != nil {
		return nil, fmt.Errorf("response.response: %v", err)
	}
	if probe.Behavior != nil {
		r.Decision = &Decision{}
		if err := json.Unmarshal(w.Response, r.Decision); err != nil {
			return nil, fmt.Errorf("permission answer: %v", err)
		}
	}
	return r, nil
}

// lines decodes the NDJSON lines of one WebSocket message, skipping blank
// ones; bad is told about each line that does not decode.
func lines(data []byte, bad func(line int, err error)) []Message {
	var out []Message
	for i, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.Trim(l, " \t\r\n")) == 0 {
			continue
		}
		m, err := decode(l)
		if err != nil {
			bad(i+1, err)
			continue
		}
		out = append(out, m)
	}
	return out
}
