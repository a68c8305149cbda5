package wire

import "encoding/json"

// The messages a client sends. Answers and requests travel as events
// posted over REST (never over the WebSocket:
// docs/protocols/claude-ai-remote.md#posting-events); only keep_alive
// and initialize go on the socket itself, each a line ending in "\n".

// KeepAliveLine is the client's {"type":"keep_alive"} line.
func KeepAliveLine() []byte { return []byte("{\"type\":\"keep_alive\"}\n") }

// InitializeLine is the initialize control_request the web app sends
// after every open (docs/protocols/claude-ai-remote.md#connection-lifecycle).
func InitializeLine(requestID string) []byte {
	type request struct {
		Subtype string `json:"subtype"`
	}
	b, _ := json.Marshal(struct {
		RequestID string  `json:"request_id"`
		Type      string  `json:"type"`
		Request   request `json:"request"`
	}{requestID, "control_request", request{"initialize"}})
	return append(b, '\n')
}

// UserEvent is a user message event carrying text as its content and
// files as its file_attachments (the web app's user message event). An empty
// sessionID is left out: a session's first events are sent before it has
// one.
func UserEvent(uuid, sessionID, text string, files ...FileAttachment) (json.RawMessage, error) {
	ev := map[string]any{
		"type":               "user",
		"uuid":               uuid,
		"parent_tool_use_id": nil,
		"message":            map[string]any{"role": "user", "content": text},
	}
	if sessionID != "" {
		ev["session_id"] = sessionID
	}
	if len(files) > 0 {
		ev["file_attachments"] = files
	}
	return json.Marshal(ev)
}

// AnswerEvent is the control_response event answering the can_use_tool
// prompt requestID with d.
func AnswerEvent(uuid, requestID string, d Decision) (json.RawMessage, error) {
	inner, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"type": "control_response",
		"uuid": uuid,
		"response": map[string]any{
			"subtype":    "success",
			"request_id": requestID,
			"response":   json.RawMessage(inner),
		},
	})
}

// ControlEvent is a control_request event; request is its "request"
// object: subtype and the fields that subtype takes.
func ControlEvent(uuid, requestID string, request map[string]any) (json.RawMessage, error) {
	return json.Marshal(map[string]any{"type": "control_request", "uuid": uuid, "request_id": requestID, "request": request})
}

// PendingMessage turns one of initialize's pending_permission_requests
// into the control_request message the server sent for it.
func PendingMessage(sessionID string, p ControlRequest) (Message, error) {
	line, err := json.Marshal(struct {
		Type      string          `json:"type"`
		RequestID string          `json:"request_id"`
		SessionID string          `json:"session_id,omitempty"`
		Request   json.RawMessage `json:"request"`
	}{"control_request", p.RequestID, sessionID, p.Raw})
	if err != nil {
		return Message{}, err
	}
	return Decode(line)
}

// ErrorEvent is the control_response event refusing the control request
// requestID with msg (the error shape of a control_response).
func ErrorEvent(uuid, requestID, msg string) (json.RawMessage, error) {
	return json.Marshal(map[string]any{
		"type": "control_response",
		"uuid": uuid,
		"response": map[string]any{
			"subtype":    "error",
			"request_id": requestID,
			"error":      msg,
		},
	})
}
