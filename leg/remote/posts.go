package remote

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

// eventNamespace makes event uuids from message ids, so a retried send of
// one message always posts the same uuid.
var eventNamespace = uuid.MustParse("6f0b7c1e-3d55-4f5e-9a57-2b0f4a8d9c11")

// EventUUID is the uuid of the user event that carries message id msgID.
func EventUUID(msgID string) string {
	if u, err := uuid.Parse(msgID); err == nil {
		return u.String()
	}
	return uuid.NewSHA1(eventNamespace, []byte("message:"+msgID)).String()
}

func targetID(m message.Message) (string, error) {
	if m.ToSessionID != "" {
		return m.ToSessionID, nil
	}
	a, err := addressing.Parse(m.To)
	if err != nil {
		return "", err
	}
	if a.Kind != addressing.KindBridge || !ValidSessionID(a.ID) {
		return "", fmt.Errorf("remote leg: %s is not a bridge: address", m.To)
	}
	return a.ID, nil
}

// Send posts m as a user event. The receipt says sent once the server
// accepted it; delivered follows when the event shows up on the session's
// live stream (followed sessions only).
func (l *Leg) Send(ctx context.Context, m message.Message) (message.Receipt, error) {
	id, err := targetID(m)
	if err != nil {
		return message.Receipt{}, err
	}
	files, err := fileAttachments(m.Attachments)
	if err != nil {
		return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: err.Error(), Time: l.cfg.Now()}, err
	}
	evUUID := EventUUID(m.ID)
	ev, err := wire.UserEvent(evUUID, id, attributed(m), files...)
	if err != nil {
		return message.Receipt{}, err
	}
	pm := postedMsg{msgID: m.ID}
	if m.From != "" {
		pm.reply = &replyTo{msgID: m.ID, from: m.From, fromName: m.FromName, fromSession: m.FromSession, hopChain: m.HopChain, mode: m.Mode}
	}
	l.posted.Put(evUUID, pm)
	if pm.reply != nil {
		// Before the post: the session may begin its turn before the
		// server's acceptance reaches us.
		l.unechoedPost(id, evUUID)
	}
	now := l.cfg.Now()
	if err := l.cfg.API.Post(ctx, id, ev); err != nil {
		l.posted.Delete(evUUID)
		l.forgetUnechoed(id, evUUID)
		// The error too, so a caller that retries (the outbox) can tell a
		// refusal (sessionsapi.ErrNotFound, ...) from a passing failure.
		return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: err.Error(), Time: now}, err
	}
	l.Wake(id) // a dormant stream comes back to hear the answer
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent, Detail: "accepted by the server", Time: now}, nil
}

// attributed is the prompt text of m: a message a local session sent
// through the bridge says who sent it and that the answer goes back.
func attributed(m message.Message) string {
	if m.From == "" || m.FromName == "" {
		return m.Body
	}
	return fmt.Sprintf("Message from %s (another coding-agent session, through the gateway). "+
		"Your final answer to it is sent back to %s.\n\n%s", m.FromName, m.FromName, m.Body)
}

// answerNamespace makes the uuid of a permission answer from the prompt, so
// a retried answer is the same event.
var answerNamespace = uuid.MustParse("0c6f2b4a-8e1d-4b7a-a3c5-5d9e7f1a2b3c")

// answerUUID is the uuid of the answer to a prompt.
func answerUUID(sessionID, requestID string) string {
	return uuid.NewSHA1(answerNamespace, []byte(sessionID+"\x00"+requestID)).String()
}

// Answer posts a's control_response for req over HTTP, as answers travel
// (never over the WebSocket:
// docs/protocols/claude-ai-remote.md#permission-prompts-and-answers). A prompt the leg saw settled
// by someone else gets a *message.PromptSettledError instead.
func (l *Leg) Answer(ctx context.Context, req message.PermissionRequest, a message.PermissionAnswer) error {
	// The session holds the first answer it got: one the stream showed
	// from someone else (or a withdrawal) makes ours lose, even while
	// that event still waits in the router's queue.
	if e, ok := l.settledBy(req.SessionID, req.RequestID); ok {
		return &e
	}
	ev, err := answerEvent(req, a)
	if err != nil {
		return err
	}
	return l.cfg.API.Post(ctx, req.SessionID, ev)
}

// answerEvent builds the control_response event answering req.
func answerEvent(req message.PermissionRequest, a message.PermissionAnswer) (json.RawMessage, error) {
	d := wire.Decision{Behavior: string(a.Behavior), ToolUseID: req.ToolUseID, Message: a.Message}
	switch a.Behavior {
	case message.BehaviorAllow:
		in, err := updatedInput(req, a)
		if err != nil {
			return nil, err
		}
		d.UpdatedInput = in
	case message.BehaviorDeny:
		if d.Message == "" {
			d.Message = "denied through the gateway"
		}
	default:
		return nil, fmt.Errorf("remote leg: behavior %q is neither allow nor deny", a.Behavior)
	}
	d.UpdatedPermissions = permissionUpdates(req, a)
	return wire.AnswerEvent(answerUUID(req.SessionID, req.RequestID), req.RequestID, d)
}

// permissionUpdates are the answer's updatedPermissions in the wire's
// spelling (message.PermissionAnswer.Updates says which and in what order).
func permissionUpdates(req message.PermissionRequest, a message.PermissionAnswer) []wire.PermissionUpdate {
	var out []wire.PermissionUpdate
	for _, u := range a.Updates(req) {
		out = append(out, wireUpdate(u))
	}
	return out
}

func wireUpdate(u message.PermissionUpdate) wire.PermissionUpdate {
	w := wire.PermissionUpdate{Type: u.Type, Behavior: u.Behavior, Destination: u.Destination, Mode: u.Mode, Directories: u.Directories}
	for _, r := range u.Rules {
		w.Rules = append(w.Rules, wire.Rule{ToolName: r.ToolName, RuleContent: r.RuleContent})
	}
	return w
}

// updatedInput is the tool input an allow carries
// (message.PermissionAnswer.Input).
func updatedInput(req message.PermissionRequest, a message.PermissionAnswer) (json.RawMessage, error) {
	in, err := a.Input(req)
	if err != nil {
		return nil, fmt.Errorf("remote leg: %w", err)
	}
	return in, nil
}
