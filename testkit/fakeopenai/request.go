package fakeopenai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// Request is one decoded chat-completions request.
type Request struct {
	Path     string // URL path without the query, e.g. /v1/chat/completions
	Header   http.Header
	Model    string
	Messages []Message
	Tools    []Tool
	Stream   bool
	// IncludeUsage is stream_options.include_usage: the client wants a last
	// chunk carrying token usage.
	IncludeUsage bool
	Raw          []byte // the body exactly as received
}

// Message is one turn of the conversation the client sent. Roles are
// system (or developer), user, assistant and tool.
type Message struct {
	Role       string     `json:"role"`
	Content    Content    `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"` // a tool message answers this call
	Name       string     `json:"name,omitempty"`
}

// ToolCall is one function call an assistant message made.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its arguments, a JSON object
// encoded as a string, as the API spells it.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is one tool the client offered the model.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// Content is a message's content. The API accepts a string, null, or a list
// of parts; all decode to Content, a string as one text part.
type Content []Part

// Part is one content part: text, or anything else (kept by Type).
type Part struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// UnmarshalJSON accepts a string, null or an array of parts.
func (c *Content) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0 || bytes.Equal(data, []byte("null")):
		*c = nil
		return nil
	case data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*c = Content{{Type: "text", Text: s}}
		return nil
	}
	var parts []Part
	if err := json.Unmarshal(data, &parts); err != nil {
		return err
	}
	*c = parts
	return nil
}

// ErrBadRequest is returned by ParseRequest for a body the API would reject.
var ErrBadRequest = errors.New("fakeopenai: bad request body")

// ParseRequest decodes a chat-completions request body. It is exported so the
// decoding of bytes from another process can be fuzzed on its own.
func ParseRequest(body []byte) (Request, error) {
	var wire struct {
		Model         string    `json:"model"`
		Messages      []Message `json:"messages"`
		Tools         []Tool    `json:"tools"`
		Stream        bool      `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return Request{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	r := Request{
		Model:    wire.Model,
		Messages: wire.Messages,
		Tools:    wire.Tools,
		Stream:   wire.Stream,
		Raw:      body,
	}
	if wire.StreamOptions != nil {
		r.IncludeUsage = wire.StreamOptions.IncludeUsage
	}
	return r, nil
}

// isSystem reports whether a role carries the system prompt.
func isSystem(role string) bool { return role == "system" || role == "developer" }

// Text is every string the model would read in the conversation: message
// text, tool-call arguments (decoded) and tool results, one per line. System
// messages are left out; see SystemText.
func (r Request) Text() string {
	var sb strings.Builder
	for _, m := range r.Messages {
		if !isSystem(m.Role) {
			m.appendText(&sb)
		}
	}
	return sb.String()
}

// Contains reports whether s occurs in the conversation (see Text). Peer
// messages delivered into a session arrive inside user content, so this is
// how a test asks "did the session see it".
func (r Request) Contains(s string) bool { return strings.Contains(r.Text(), s) }

// SystemText is the text of the system (and developer) messages.
func (r Request) SystemText() string {
	var sb strings.Builder
	for _, m := range r.Messages {
		if isSystem(m.Role) {
			m.appendText(&sb)
		}
	}
	return sb.String()
}

// HasTool reports whether the client offered a tool with this name.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// LastUser is the newest user message, or the zero Message.
func (r Request) LastUser() Message {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i]
		}
	}
	return Message{}
}

// ToolResult is the tool message answering the call with this id.
func (r Request) ToolResult(callID string) (Message, bool) {
	for _, m := range r.Messages {
		if m.Role == "tool" && m.ToolCallID == callID {
			return m, true
		}
	}
	return Message{}, false
}

// ToolCalls lists every call the assistant made in the conversation, oldest
// first.
func (r Request) ToolCalls() []ToolCall {
	var out []ToolCall
	for _, m := range r.Messages {
		out = append(out, m.ToolCalls...)
	}
	return out
}

// Text is the message's readable text (see Request.Text).
func (m Message) Text() string {
	var sb strings.Builder
	m.appendText(&sb)
	return sb.String()
}

func (m Message) appendText(sb *strings.Builder) {
	for _, p := range m.Content {
		if p.Text != "" {
			sb.WriteString(p.Text)
			sb.WriteByte('\n')
		}
	}
	for _, c := range m.ToolCalls {
		// Walk the decoded arguments so a search sees strings unescaped.
		var v any
		if json.Unmarshal([]byte(c.Function.Arguments), &v) == nil {
			appendStrings(sb, v)
		} else if c.Function.Arguments != "" {
			sb.WriteString(c.Function.Arguments)
			sb.WriteByte('\n')
		}
	}
}

func appendStrings(sb *strings.Builder, v any) {
	switch v := v.(type) {
	case string:
		sb.WriteString(v)
		sb.WriteByte('\n')
	case []any:
		for _, e := range v {
			appendStrings(sb, e)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			appendStrings(sb, v[k])
		}
	}
}
