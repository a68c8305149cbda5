package wire

import "encoding/json"

// maxListed bounds the models and commands kept from one initialize answer.
const maxListed = 256

// Model is one of initialize's models: an object with value, displayName
// and description, or a bare name (captured traffic shows only an empty list).
type Model struct {
	Value       string `json:"value"`
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
}

// Command is one of initialize's commands (slash commands): an object
// with name, description and argumentHint, or a bare name.
type Command struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	ArgumentHint string `json:"argumentHint"`
}

// ModelList decodes Models; entries of another shape are skipped.
func (r *InitializeResponse) ModelList() []Model {
	return list(r.Models, func(s string) Model { return Model{Value: s} }, func(m Model) bool { return m.Value != "" })
}

// CommandList decodes Commands; entries of another shape are skipped.
func (r *InitializeResponse) CommandList() []Command {
	return list(r.Commands, func(s string) Command { return Command{Name: s} }, func(c Command) bool { return c.Name != "" })
}

// list decodes a JSON array whose entries are objects of T or strings,
// keeping at most maxListed valid ones.
func list[T any](raw json.RawMessage, named func(string) T, valid func(T) bool) []T {
	var entries []json.RawMessage
	if json.Unmarshal(raw, &entries) != nil {
		return nil
	}
	var out []T
	for _, e := range entries {
		if len(out) == maxListed {
			break
		}
		var v T
		var s string
		switch {
		case json.Unmarshal(e, &s) == nil:
			v = named(s)
		case json.Unmarshal(e, &v) != nil:
			continue
		}
		if valid(v) {
			out = append(out, v)
		}
	}
	return out
}
