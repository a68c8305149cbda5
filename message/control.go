package message

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PermissionModes are the modes set_permission_mode takes
// (docs/protocols/claude-ai-remote.md#control-requests).
var PermissionModes = []string{"default", "acceptEdits", "plan", "bypassPermissions"}

// ValidPermissionMode says whether mode is one of PermissionModes.
func ValidPermissionMode(mode string) bool { return slices.Contains(PermissionModes, mode) }

// ControlResult is how a session answered a control request.
type ControlResult struct {
	RequestID string `json:"request_id,omitempty"`
	// Acknowledged says the session answered success. It is false only
	// when its answer cannot be read (a session the gateway does not
	// follow); an error answer is a *ControlRefusedError instead.
	Acknowledged bool   `json:"acknowledged"`
	Detail       string `json:"detail,omitempty"`
}

// ControlRefusedError is a session's error answer to a control request.
type ControlRefusedError struct {
	Kind      ControlKind
	RequestID string
	Reason    string // the session's error text
}

func (e *ControlRefusedError) Error() string {
	return fmt.Sprintf("the session refused %s: %s", e.Kind, e.Reason)
}

// ErrNoControlAnswer means the session did not answer a control request in
// time: it was sent, its effect is unknown.
var ErrNoControlAnswer = errors.New("the session did not answer the control request in time")

// SessionInfo is what a remote session told about itself: its answer to
// initialize (WebSocket only) and the mode and model it last reported or
// accepted.
type SessionInfo struct {
	SessionID string `json:"session_id"`
	Address   string `json:"address"`
	// Followed says the gateway keeps the session live; only then does it
	// hear initialize's answer and the answers to control requests.
	Followed bool `json:"followed"`
	// Initialized says initialize was answered; Models, Commands and
	// OutputStyle are its answer's.
	Initialized    bool          `json:"initialized"`
	Models         []ModelInfo   `json:"models"`
	Commands       []CommandInfo `json:"commands"`
	OutputStyle    string        `json:"output_style,omitempty"`
	PermissionMode string        `json:"permission_mode,omitempty"` // "" when not known
	Model          string        `json:"model,omitempty"`           // "" when not known
	Updated        time.Time     `json:"updated,omitzero"`
}

// ModelInfo is one model a session offers.
type ModelInfo struct {
	Value       string `json:"value"`
	DisplayName string `json:"display_name,omitempty"`
	Description string `json:"description,omitempty"`
}

// CommandInfo is one slash command a session offers.
type CommandInfo struct {
	Name         string `json:"name"`
	Description  string `json:"description,omitempty"`
	ArgumentHint string `json:"argument_hint,omitempty"`
}

// CheckModel says whether model may be asked of the session: any when it
// listed none (or was not heard), else one of its values or display names.
func (i SessionInfo) CheckModel(model string) error {
	if model == "" || len(i.Models) == 0 {
		return nil
	}
	var names []string
	for _, m := range i.Models {
		if m.Value == model || m.DisplayName != "" && m.DisplayName == model {
			return nil
		}
		names = append(names, m.Value)
	}
	return fmt.Errorf("the session offers no model %q; it offers %s", model, strings.Join(names, ", "))
}

// RemoteControl is a control request or answer a remote session sent.
type RemoteControl struct {
	RequestID string `json:"request_id"`
	Subtype   string `json:"subtype,omitempty"` // a request's subtype
	// Unserved says the gateway does not serve the request's subtype and
	// answered it at once with an error, so the session does not wait.
	Unserved bool `json:"unserved,omitempty"`
	// Error is an error answer's text.
	Error string `json:"error,omitempty"`
}
