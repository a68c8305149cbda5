package claude

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/message"
)

// What the hook endpoint writes to Claude Code, and how it tells that a
// prompt was settled at the session's own terminal.

// wireUpdate is a permission update as Claude Code spells it.
type wireUpdate struct {
	Type        string     `json:"type"`
	Rules       []wireRule `json:"rules,omitempty"`
	Behavior    string     `json:"behavior,omitempty"`
	Destination string     `json:"destination,omitempty"`
	Mode        string     `json:"mode,omitempty"`
	Directories []string   `json:"directories,omitempty"`
}

type wireRule struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

func (u wireUpdate) model() message.PermissionUpdate {
	m := message.PermissionUpdate{Type: u.Type, Behavior: u.Behavior, Destination: u.Destination, Mode: u.Mode, Directories: u.Directories}
	for _, r := range u.Rules {
		m.Rules = append(m.Rules, message.PermissionRule{ToolName: r.ToolName, RuleContent: r.RuleContent})
	}
	return m
}

func wireOf(u message.PermissionUpdate) wireUpdate {
	w := wireUpdate{Type: u.Type, Behavior: u.Behavior, Destination: u.Destination, Mode: u.Mode, Directories: u.Directories}
	for _, r := range u.Rules {
		w.Rules = append(w.Rules, wireRule{ToolName: r.ToolName, RuleContent: r.RuleContent})
	}
	return w
}

// hookOutput is the PermissionRequest hook's stdout carrying a.
func hookOutput(req message.PermissionRequest, a message.PermissionAnswer) (json.RawMessage, error) {
	type decision struct {
		Behavior           string          `json:"behavior"`
		UpdatedInput       json.RawMessage `json:"updatedInput,omitempty"`
		UpdatedPermissions []wireUpdate    `json:"updatedPermissions,omitempty"`
		Message            string          `json:"message,omitempty"`
	}
	d := decision{Behavior: string(a.Behavior)}
	switch a.Behavior {
	case message.BehaviorAllow:
		if len(a.UpdatedInput) > 0 || len(a.Answers) > 0 {
			in, err := a.Input(req)
			if err != nil {
				return nil, fmt.Errorf("claude leg: %w", err)
			}
			d.UpdatedInput = in
		}
		for _, u := range a.Updates(req) {
			d.UpdatedPermissions = append(d.UpdatedPermissions, wireOf(u))
		}
	case message.BehaviorDeny:
		d.Message = a.Message
		if d.Message == "" {
			d.Message = "denied through the gateway"
		}
	default:
		return nil, fmt.Errorf("claude leg: behavior %q is neither allow nor deny", a.Behavior)
	}
	type specific struct {
		HookEventName string   `json:"hookEventName"`
		Decision      decision `json:"decision"`
	}
	return jsonx.Marshal(struct {
		HookSpecificOutput specific `json:"hookSpecificOutput"`
	}{specific{HookPermissionRequest, d}})
}

const reasonAtTerminal = "answered at the session's terminal"

// settleAtTerminal ends the wait of the prompts the session shows were
// answered at its terminal: the oldest waiting for the same tool and input
// when that tool ran, every one of the session's when its turn ended. The
// terminal's dialog races the hook and a terminal answer does not end the
// hook (interop/FINDINGS-hooks.md), so without this the gateway would list
// a prompt nobody can answer any more.
func (h *hooks) settleAtTerminal(in hookInput, why terminalEnd) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var oldest *hookPrompt
	for _, hp := range h.open {
		if hp.req.SessionID != in.SessionID || hp.why != notAtTerminal {
			continue
		}
		if why == turnEnded {
			hp.why = why
			close(hp.elsewhere)
			continue
		}
		if hp.req.ToolName == in.ToolName && sameJSON(hp.req.Input, in.ToolInput) &&
			(oldest == nil || hp.req.Created.Before(oldest.req.Created)) {
			oldest = hp
		}
	}
	if oldest != nil {
		oldest.why = why
		close(oldest.elsewhere)
	}
}

// sameJSON says whether two JSON texts hold the same value.
func sameJSON(a, b json.RawMessage) bool {
	if len(b) == 0 {
		b = json.RawMessage("{}")
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
