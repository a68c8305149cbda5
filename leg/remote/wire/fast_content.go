package wire

// The fast path's readers of a message's body: content, blocks, usage.

// body is the "message" of an assistant or user message: both shapes at once.
type body struct {
	id, model, role, stopReason, stopSequence string
	content                                   Content
	usage                                     *Usage
}

var bodyNames = []string{"id", "model", "role", "content", "stop_reason", "stop_sequence", "usage"}

func (f *fast) body() (body, bool) {
	var b body
	ok := f.object(bodyNames, func(name []byte) (bool, bool) {
		switch string(name) {
		case "id":
			return true, f.str(&b.id)
		case "model":
			return true, f.str(&b.model)
		case "role":
			return true, f.str(&b.role)
		case "content":
			c, ok := f.content(0)
			b.content = c
			return true, ok
		case "stop_reason":
			return true, f.str(&b.stopReason)
		case "stop_sequence":
			return true, f.str(&b.stopSequence)
		case "usage":
			u, ok := f.usage()
			b.usage = u
			return true, ok
		}
		return false, true
	})
	return b, ok
}

// content reads a string or a list of blocks, as decodeContent does.
func (f *fast) content(depth int) (Content, bool) {
	if depth > maxContentDepth {
		return Content{}, false
	}
	switch f.dec.PeekKind() {
	case 'n':
		return Content{}, f.skip()
	case '"':
		var s string
		if !f.str(&s) {
			return Content{}, false
		}
		return Content{String: true, Blocks: []Block{{Kind: BlockText, Type: "text", Text: s, Raw: textBlock(s)}}}, true
	case '[':
	default:
		return Content{}, false
	}
	if _, err := f.dec.ReadToken(); err != nil {
		return Content{}, false
	}
	first := len(f.blocks)
	for f.dec.PeekKind() == '{' {
		b, ok := f.block(depth)
		if !ok {
			return Content{}, false
		}
		f.blocks = append(f.blocks, b)
	}
	if t, err := f.dec.ReadToken(); err != nil || t.Kind() != ']' {
		return Content{}, false
	}
	c := Content{Blocks: make([]Block, len(f.blocks)-first)}
	copy(c.Blocks, f.blocks[first:])
	clear(f.blocks[first:])
	f.blocks = f.blocks[:first]
	return c, true
}

var blockNames = []string{"type", "text", "id", "name", "input", "caller", "tool_use_id", "content",
	"is_error", "thinking", "signature", "tool_name"}

func (f *fast) block(depth int) (Block, bool) {
	var (
		b          Block
		content    Content
		hasContent bool
		start      = f.off()
	)
	ok := f.object(blockNames, func(name []byte) (bool, bool) {
		switch string(name) {
		case "type":
			return true, f.str(&b.Type)
		case "text":
			return true, f.str(&b.Text)
		case "id":
			return true, f.str(&b.ID)
		case "name":
			return true, f.str(&b.Name)
		case "input":
			return true, f.rawValue(&b.Input)
		case "caller":
			null, ok := f.null()
			if null || !ok {
				return true, ok
			}
			return true, f.object([]string{"type"}, func(name []byte) (bool, bool) {
				if string(name) == "type" {
					return true, f.str(&b.CallerType)
				}
				return false, true
			})
		case "tool_use_id":
			return true, f.str(&b.ToolUseID)
		case "content":
			null, ok := f.null()
			if null || !ok {
				return true, ok
			}
			hasContent = true
			content, ok = f.content(depth + 1)
			return true, ok
		case "is_error":
			return true, f.bool(&b.IsError)
		case "thinking":
			return true, f.str(&b.Thinking)
		case "signature":
			return true, f.str(&b.Signature)
		case "tool_name":
			return true, f.str(&b.ToolName)
		}
		return false, true
	})
	if !ok {
		return Block{}, false
	}
	// The object began at the first non-space byte after start.
	for start < len(f.raw) && f.raw[start] != '{' {
		start++
	}
	end := f.off()
	b.Kind, b.Raw = lookup[BlockKind](blockWire[:], b.Type), f.raw[start:end:end]
	// Keep only the kind's fields, as decodeBlock does.
	switch b.Kind {
	case BlockText:
		b = Block{Kind: b.Kind, Type: b.Type, Raw: b.Raw, Text: b.Text}
	case BlockToolUse:
		b = Block{Kind: b.Kind, Type: b.Type, Raw: b.Raw, ID: b.ID, Name: b.Name, Input: b.Input, CallerType: b.CallerType}
	case BlockToolResult:
		b = Block{Kind: b.Kind, Type: b.Type, Raw: b.Raw, ToolUseID: b.ToolUseID, IsError: b.IsError}
		if hasContent {
			b.Content = new(Content)
			*b.Content = content
		}
	case BlockThinking:
		b = Block{Kind: b.Kind, Type: b.Type, Raw: b.Raw, Thinking: b.Thinking, Signature: b.Signature}
	case BlockToolReference:
		b = Block{Kind: b.Kind, Type: b.Type, Raw: b.Raw, ToolName: b.ToolName}
	default:
		b = Block{Kind: b.Kind, Type: b.Type, Raw: b.Raw}
	}
	return b, true
}

var usageNames = []string{"input_tokens", "output_tokens", "cache_creation_input_tokens",
	"cache_read_input_tokens", "cache_creation", "inference_geo", "service_tier", "speed"}

var cacheNames = []string{"ephemeral_1h_input_tokens", "ephemeral_5m_input_tokens"}

func (f *fast) usage() (*Usage, bool) {
	if null, ok := f.null(); null || !ok {
		return nil, ok
	}
	u := new(Usage)
	ok := f.object(usageNames, func(name []byte) (bool, bool) {
		switch string(name) {
		case "input_tokens":
			return true, f.int64(&u.InputTokens)
		case "output_tokens":
			return true, f.int64(&u.OutputTokens)
		case "cache_creation_input_tokens":
			return true, f.int64(&u.CacheCreationInputTokens)
		case "cache_read_input_tokens":
			return true, f.int64(&u.CacheReadInputTokens)
		case "cache_creation":
			null, ok := f.null()
			if null || !ok {
				u.CacheCreation = nil
				return true, ok
			}
			c := new(Cache)
			u.CacheCreation = c
			return true, f.object(cacheNames, func(name []byte) (bool, bool) {
				switch string(name) {
				case "ephemeral_1h_input_tokens":
					return true, f.int64(&c.Ephemeral1hInputTokens)
				case "ephemeral_5m_input_tokens":
					return true, f.int64(&c.Ephemeral5mInputTokens)
				}
				return false, true
			})
		case "inference_geo":
			return true, f.str(&u.InferenceGeo)
		case "service_tier":
			return true, f.str(&u.ServiceTier)
		case "speed":
			return true, f.str(&u.Speed)
		}
		return false, true
	})
	return u, ok
}
