package fakeanthropic

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

// Request is one decoded request to the Messages API.
type Request struct {
	Path      string // URL path without the query, e.g. /v1/messages
	Header    http.Header
	Model     string
	System    []Block // a plain-string system prompt becomes one text block
	Messages  []Message
	Tools     []Tool
	Stream    bool
	MaxTokens int
	Raw       []byte // the body exactly as received
}

// Message is one turn of the conversation the client sent.
type Message struct {
	Role    string `json:"role"`
	Content Blocks `json:"content"`
}

// Block is one content block: text, tool_use, tool_result, or anything else
// the client sends (kept by Type, with the fields we do not model dropped).
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   Blocks          `json:"content,omitempty"` // a tool_result's content
	IsError   bool            `json:"is_error,omitempty"`
}

// Tool is one tool the client offered the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// Blocks is a content list. The API accepts a bare string where a list of
// blocks is expected; both decode to Blocks, a string as one text block.
type Blocks []Block

// UnmarshalJSON accepts a string, null or an array of blocks.
func (b *Blocks) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0 || bytes.Equal(data, []byte("null")):
		*b = nil
		return nil
	case data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*b = Blocks{{Type: "text", Text: s}}
		return nil
	}
	var list []Block
	if err := json.Unmarshal(data, &list); err != nil {
		return err
	}
	*b = list
	return nil
}

// ErrBadRequest is returned by ParseRequest for a body the API would reject.
var ErrBadRequest = errors.New("fakeanthropic: bad request body")

// ParseRequest decodes a Messages API request body. It is exported so the
// decoding of bytes from another process can be fuzzed on its own.
func ParseRequest(body []byte) (Request, error) {
	var wire struct {
		Model     string    `json:"model"`
		System    Blocks    `json:"system"`
		Messages  []Message `json:"messages"`
		Tools     []Tool    `json:"tools"`
		Stream    bool      `json:"stream"`
		MaxTokens int       `json:"max_tokens"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return Request{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return Request{
		Model:     wire.Model,
		System:    wire.System,
		Messages:  wire.Messages,
		Tools:     wire.Tools,
		Stream:    wire.Stream,
		MaxTokens: wire.MaxTokens,
		Raw:       body,
	}, nil
}

// Text is every string the model would read in the messages: text blocks,
// tool inputs and tool results, one per line. The system prompt is left out;
// see SystemText.
func (r Request) Text() string {
	var sb strings.Builder
	for _, m := range r.Messages {
		m.Content.appendText(&sb)
	}
	return sb.String()
}

// Contains reports whether s occurs in the messages (see Text). Peer messages
// delivered into a session arrive inside user content, so this is how a test
// asks "did the session see it".
func (r Request) Contains(s string) bool { return strings.Contains(r.Text(), s) }

// SystemText is the system prompt as one string.
func (r Request) SystemText() string {
	var sb strings.Builder
	Blocks(r.System).appendText(&sb)
	return sb.String()
}

// HasTool reports whether the client offered a tool with this name.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
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

// ToolResults lists every tool_result block, oldest first.
func (r Request) ToolResults() []Block {
	var out []Block
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				out = append(out, b)
			}
		}
	}
	return out
}

// ToolResult is the result the client sent for the tool_use with this id.
func (r Request) ToolResult(toolUseID string) (Block, bool) {
	for _, b := range r.ToolResults() {
		if b.ToolUseID == toolUseID {
			return b, true
		}
	}
	return Block{}, false
}

// Text is the message's readable text (see Request.Text).
func (m Message) Text() string {
	var sb strings.Builder
	m.Content.appendText(&sb)
	return sb.String()
}

func (bs Blocks) appendText(sb *strings.Builder) {
	for _, b := range bs {
		b.appendText(sb)
	}
}

func (b Block) appendText(sb *strings.Builder) {
	if b.Text != "" {
		sb.WriteString(b.Text)
		sb.WriteByte('\n')
	}
	if len(b.Input) > 0 {
		// Walk the decoded input so a search sees strings unescaped.
		var v any
		if json.Unmarshal(b.Input, &v) == nil {
			appendStrings(sb, v)
		}
	}
	b.Content.appendText(sb)
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
