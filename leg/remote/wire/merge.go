package wire

// MergeAssistant folds a streamed copy of an assistant message into the copy
// seen so far under the same message ID. Each copy replaces the previous
// content for its block type
// (docs/protocols/claude-ai-remote.md#messages-on-the-live-channel): a block replaces the earlier block of
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
