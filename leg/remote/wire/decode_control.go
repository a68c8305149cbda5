package wire

import (
	"encoding/json"
	"fmt"
)

// requestWire holds every field any known control request subtype uses.
type requestWire struct {
	Subtype               string          `json:"subtype"`
	RequestID             string          `json:"request_id"`
	ToolName              string          `json:"tool_name"`
	ToolUseID             string          `json:"tool_use_id"`
	Description           string          `json:"description"`
	Input                 json.RawMessage `json:"input"`
	PermissionSuggestions json.RawMessage `json:"permission_suggestions"`
	BlockedPath           *string         `json:"blocked_path"`
	Mode                  string          `json:"mode"`
	Model                 *string         `json:"model"`
	MaxThinkingTokens     *int64          `json:"max_thinking_tokens"`
	Hooks                 json.RawMessage `json:"hooks"`
	SDKMCPServers         []string        `json:"sdkMcpServers"`
	ServerName            string          `json:"server_name"`
	Message               json.RawMessage `json:"message"`
	CallbackID            string          `json:"callback_id"`
}

// decodeRequest decodes a control_request's "request" object. requestID is
// the envelope's; an id inside the request is used when the envelope has none
// (seen nowhere, but pending_permission_requests leaves the shape open).
func decodeRequest(requestID string, raw json.RawMessage) (*ControlRequest, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("%w: control_request has no request", ErrField)
	}
	var w requestWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, classify(err, "request")
	}
	if requestID == "" {
		requestID = w.RequestID
	}
	r := &ControlRequest{
		RequestID: requestID, Subtype: lookup[Subtype](subtypeWire[:], w.Subtype),
		SubtypeRaw: w.Subtype, Raw: raw,
	}
	switch r.Subtype {
	case SubtypeCanUseTool:
		r.ToolName, r.ToolUseID, r.Description, r.Input = w.ToolName, w.ToolUseID, w.Description, w.Input
		r.PermissionSuggestions, r.BlockedPath = w.PermissionSuggestions, deref(w.BlockedPath)
	case SubtypeSetPermissionMode:
		r.Mode = w.Mode
	case SubtypeSetModel:
		r.Model = deref(w.Model)
	case SubtypeSetMaxThinkingTokens:
		r.MaxThinkingTokens = w.MaxThinkingTokens
	case SubtypeInitialize:
		r.Hooks, r.SDKMCPServers = w.Hooks, w.SDKMCPServers
	case SubtypeMCPMessage:
		r.ServerName, r.MCPMessage = w.ServerName, w.Message
	case SubtypeHookCallback:
		r.CallbackID = w.CallbackID
	}
	return r, nil
}

func decodeResponse(raw json.RawMessage) (*ControlResponse, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("%w: control_response has no response", ErrField)
	}
	var w struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Error     string          `json:"error"`
		Response  json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, classify(err, "response")
	}
	r := &ControlResponse{Subtype: w.Subtype, RequestID: w.RequestID, Error: w.Error, Response: w.Response}
	if isNull(w.Response) {
		return r, nil
	}
	if w.Response[0] != '{' {
		return nil, fmt.Errorf("%w: response.response is not an object", ErrField)
	}
	var inner struct {
		Behavior    *string           `json:"behavior"`
		Pending     []json.RawMessage `json:"pending_permission_requests"`
		MCPResponse json.RawMessage   `json:"mcp_response"`
		Commands    json.RawMessage   `json:"commands"`
		Models      json.RawMessage   `json:"models"`
		Account     json.RawMessage   `json:"account"`
		PID         json.RawMessage   `json:"pid"`
	}
	if err := json.Unmarshal(w.Response, &inner); err != nil {
		return nil, classify(err, "response.response")
	}
	if inner.Behavior != nil {
		r.Decision = new(Decision)
		if err := json.Unmarshal(w.Response, r.Decision); err != nil {
			return nil, classify(err, "permission decision")
		}
	}
	if inner.Commands != nil || inner.Models != nil || inner.Account != nil || inner.PID != nil {
		r.Initialize = new(InitializeResponse)
		if err := json.Unmarshal(w.Response, r.Initialize); err != nil {
			return nil, classify(err, "initialize response")
		}
	}
	r.MCPResponse = inner.MCPResponse
	for i, p := range inner.Pending {
		req, err := decodePending(p)
		if err != nil {
			return nil, fmt.Errorf("pending_permission_requests[%d]: %w", i, err)
		}
		r.Pending = append(r.Pending, *req)
	}
	return r, nil
}

// decodePending takes a pending permission request in either shape it may
// come in: a whole control_request message ({"type","request_id","request"})
// or a bare request object with its own request_id.
func decodePending(raw json.RawMessage) (*ControlRequest, error) {
	var w struct {
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%w: pending request is not an object", ErrField)
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, classify(err, "pending request")
	}
	if !isNull(w.Request) {
		return decodeRequest(w.RequestID, w.Request)
	}
	return decodeRequest("", raw)
}
