package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/message"
)

// A peer socket carries newline-delimited JSON objects: an optional auth line,
// then user or control frames. The "type" field decides which.
const (
	TypeAuth    = "auth"
	TypeUser    = "user"
	TypeControl = "control"
)

// MsgVersion is the msgV every genuine frame carries. Receivers do not check
// it (2 and absent both deliver).
const MsgVersion = 1

// Priorities of a user frame. SendMessage sends "next"; "later" is accepted the
// same way; "now" jumps the receiver's queue.
const (
	PriorityNext  = "next"
	PriorityLater = "later"
	PriorityNow   = "now"
)

// Action is a control frame's action. Its value is its wire spelling.
type Action string

const (
	ActionPeerMessageStatus      Action = "peer_message_status"      // a receipt
	ActionNotifyWhenIdle         Action = "notify_when_idle"         // subscribe to the target's idle state
	ActionPeerIdleNotice         Action = "peer_idle_notice"         // the answer to a subscription
	ActionRename                 Action = "rename"                   // the receiver's own name changes
	ActionYieldArtifactReplies   Action = "yield_artifact_replies"   // same-conversation hand-over request
	ActionArtifactRepliesYielded Action = "artifact_replies_yielded" // its answer
	ActionUnyieldArtifactReplies Action = "unyield_artifact_replies" // hand-back
)

// WireStatus is a receipt's status as it travels. Its value is its wire
// spelling.
type WireStatus string

const (
	WireHeld      WireStatus = "held"
	WireDelivered WireStatus = "delivered"
	WireDenied    WireStatus = "denied"
	WireExpired   WireStatus = "expired" // with status_detail "refused" it means refused
	WireDropped   WireStatus = "dropped" // with drop_reason and dropped_msg_ids
	// WireRefused is accepted on receipt, as Claude Code accepts it, but never
	// sent: refused travels as expired + status_detail "refused".
	WireRefused WireStatus = "refused"
)

// DetailRefused is the status_detail that turns expired into refused.
const DetailRefused = "refused"

// Idle states in a peer_idle_notice.
const (
	IdleStateIdle   = "idle"
	IdleStateExited = "exited"
)

// wireStatuses maps each wire status (and detail) to the model's status, and
// holds the reason text Claude Code 2.1.332 sends with it.
var wireStatuses = []struct {
	wire   WireStatus
	detail string
	status message.Status
	reason string
}{
	{WireHeld, "", message.StatusHeld, "Your message is held for the recipient user's approval before it reaches their Claude session (permission-mode parity)."},
	{WireDelivered, "", message.StatusDelivered, "Your previously-held message was approved and released to the recipient's Claude session."},
	{WireDenied, "", message.StatusDenied, "The recipient user declined your message; it was not delivered to their Claude session."},
	{WireExpired, DetailRefused, message.StatusRefused, "The recipient session is not accepting cross-session messages (the feature is off there, or a setting or policy there refuses them); your message was not delivered to its Claude."},
	{WireExpired, "", message.StatusExpired, "Your held message expired without approval and was not delivered to the recipient's Claude session."},
	{WireDropped, "", message.StatusDropped, "The recipient's session dropped your message at its inbox (rate limit, duplicate, relay loop, or full queue); it was not delivered and will not be."},
	{WireRefused, "", message.StatusRefused, ""},
}

// StatusOf maps a wire status and its status_detail to the model's status:
// expired with detail "refused" is message.StatusRefused. Any other detail is
// ignored. ok is false for a status Claude Code does not send.
func StatusOf(st WireStatus, detail string) (s message.Status, ok bool) {
	for _, w := range wireStatuses {
		if w.wire == st && (w.detail == "" || w.detail == detail) {
			return w.status, true
		}
	}
	return 0, false
}

// WireOf maps a model status to what travels: its wire status and
// status_detail. ok is false for a status no receipt carries (queued, sent,
// misaddressed, failed).
func WireOf(s message.Status) (st WireStatus, detail string, ok bool) {
	for _, w := range wireStatuses {
		if w.status == s && w.reason != "" {
			return w.wire, w.detail, true
		}
	}
	return "", "", false
}

// ReceiptReason is the human text Claude Code sends with a receipt of this
// wire status and detail; "" for an unknown pair.
func ReceiptReason(st WireStatus, detail string) string {
	for _, w := range wireStatuses {
		if w.wire == st && (w.detail == "" || w.detail == detail) {
			return w.reason
		}
	}
	return ""
}

// Auth is the optional first line of a connection: the target's peerToken or
// childToken. The token never reaches a log.
type Auth struct {
	Type  string `json:"type"`
	Token string `json:"token"`
}

// LogValue keeps the token out of structured logs.
func (a Auth) LogValue() slog.Value {
	return slog.GroupValue(slog.String("type", a.Type), slog.String("token", "[redacted]"))
}

// String keeps the token out of fmt output.
func (a Auth) String() string { return "auth{token:[redacted]}" }

// GoString keeps the token out of %#v.
func (a Auth) GoString() string { return a.String() }

// UserMessage is a user frame's message: role "user" and the envelope text.
type UserMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Frame is a user frame or a control frame. Fields the other kind does not use
// stay empty and are left out on the wire. Unknown fields are dropped on read.
type Frame struct {
	MsgV  int    `json:"msgV,omitempty"`
	MsgID string `json:"msg_id,omitempty"` // a uuid v4
	Type  string `json:"type"`

	// user
	UUID            string               `json:"uuid,omitempty"`
	Message         *UserMessage         `json:"message,omitempty"`
	Priority        string               `json:"priority,omitempty"`
	From            string               `json:"from,omitempty"`       // sender's address; on control frames too
	SessionID       string               `json:"session_id,omitempty"` // when set, must equal the receiver's
	FromPlugin      string               `json:"from_plugin,omitempty"`
	LocalChain      json.RawMessage      `json:"local_chain,omitempty"` // Claude Code sends a comma-joined string
	FileAttachments []message.Attachment `json:"file_attachments,omitempty"`

	// control
	Action        Action     `json:"action,omitempty"`
	Status        WireStatus `json:"status,omitempty"`
	StatusDetail  string     `json:"status_detail,omitempty"`
	Reason        string     `json:"reason,omitempty"` // receipt text; "resume"|"claim" on a yield request
	OrigMsgID     string     `json:"orig_msg_id,omitempty"`
	DropReason    string     `json:"drop_reason,omitempty"`    // see message.ParseDropReason
	DroppedMsgIDs []string   `json:"dropped_msg_ids,omitzero"` // nil is left out; empty prints []
	State         string     `json:"state,omitempty"`          // idle notice: IdleStateIdle or IdleStateExited
	FinishedAt    int64      `json:"finished_at,omitempty"`    // idle notice: epoch ms of the last turn's end
	Detail        string     `json:"detail,omitempty"`         // idle notice: preview of the last reply
	FromMode      string     `json:"from_mode,omitempty"`
	Name          string     `json:"name,omitempty"` // rename

	// the artifact_yield family, carried but not interpreted
	Slugs     []string        `json:"slugs,omitempty"`
	SentAt    int64           `json:"sent_at,omitempty"`
	ClaimedAt int64           `json:"claimed_at,omitempty"`
	Requester json.RawMessage `json:"requester,omitempty"`
	Yielded   json.RawMessage `json:"yielded,omitempty"`
	NotHeld   json.RawMessage `json:"not_held,omitempty"`
	Refused   json.RawMessage `json:"refused,omitempty"`
	Stopped   bool            `json:"stopped,omitempty"`
}

// Marshal encodes f as one JSON object, without the trailing newline. It
// leaves < > & unescaped, as JSON.stringify does: the envelope is full of
// angle brackets, and escaping each as \u003c would eat into the line cap.
func (f Frame) Marshal() ([]byte, error) { return jsonx.Marshal(f) }

// Marshal encodes a as one JSON object, without the trailing newline.
func (a Auth) Marshal() ([]byte, error) { return jsonx.Marshal(a) }

// NewUserFrame builds the frame SendMessage sends: msgV 1, msgID, type user,
// the envelope as message content, priority next, from. As Claude Code does,
// it carries the plugin in from_plugin rather than in the envelope (the
// receiver stamps it in), so env.FromPlugin moves to the frame. env should
// Validate; the frame prints whatever env holds.
func NewUserFrame(from, msgID string, env Envelope, attachments []message.Attachment) Frame {
	plugin := env.FromPlugin
	env.FromPlugin = ""
	return Frame{
		MsgV: MsgVersion, MsgID: msgID, Type: TypeUser,
		Message:  &UserMessage{Role: "user", Content: env.String()},
		Priority: PriorityNext, From: from, FromPlugin: plugin,
		FileAttachments: attachments,
	}
}

// NewStatusReceipt builds a peer_message_status receipt about origMsgID, sent
// from our address from. An empty reason takes Claude Code's text for st and
// detail. Its own msg_id is fresh.
func NewStatusReceipt(from, origMsgID string, st WireStatus, detail, reason string) Frame {
	if reason == "" {
		reason = ReceiptReason(st, detail)
	}
	return Frame{
		Type: TypeControl, Action: ActionPeerMessageStatus,
		Status: st, StatusDetail: detail, Reason: reason,
		From: from, OrigMsgID: origMsgID,
		MsgV: MsgVersion, MsgID: newMsgID(),
	}
}

// NewReceipt builds the receipt for a model status: refused becomes expired +
// status_detail refused. ok is false for a status no receipt carries.
func NewReceipt(from, origMsgID string, s message.Status, reason string) (f Frame, ok bool) {
	st, detail, ok := WireOf(s)
	if !ok {
		return Frame{}, false
	}
	return NewStatusReceipt(from, origMsgID, st, detail, reason), true
}

// NewDropReceipt builds a dropped receipt about origMsgID with the drop reason
// and the ids of the messages it covers (Claude Code coalesces later drops from
// one sender into one receipt; the first goes out at once with none, and
// then carries "dropped_msg_ids":[], as Claude Code's does).
func NewDropReceipt(from, origMsgID string, r message.DropReason, droppedMsgIDs ...string) Frame {
	f := NewStatusReceipt(from, origMsgID, WireDropped, "", "")
	f.DropReason = r.String()
	f.DroppedMsgIDs = droppedMsgIDs
	if f.DroppedMsgIDs == nil {
		f.DroppedMsgIDs = []string{}
	}
	return f
}

// NewIdleNotice answers the notify_when_idle whose msg_id was origMsgID: state
// is IdleStateIdle or IdleStateExited, finishedAtMs the epoch milliseconds at
// which the last turn ended, detail a preview of its reply. fromMode is our
// review class, left out when empty.
func NewIdleNotice(from, origMsgID, state string, finishedAtMs int64, detail, fromMode string) Frame {
	return Frame{
		Type: TypeControl, Action: ActionPeerIdleNotice,
		OrigMsgID: origMsgID, State: state, FinishedAt: finishedAtMs, Detail: detail,
		From: from, FromMode: fromMode,
		MsgV: MsgVersion, MsgID: newMsgID(),
	}
}

// NewNotifyWhenIdle subscribes us (at from) to the target's idle state; the
// notice comes back with orig_msg_id = msgID.
func NewNotifyWhenIdle(from, msgID, fromMode string) Frame {
	return Frame{
		Type: TypeControl, Action: ActionNotifyWhenIdle,
		From: from, FromMode: fromMode,
		MsgV: MsgVersion, MsgID: msgID,
	}
}

// ReceiptOf reads a peer_message_status frame as a receipt about our message
// orig_msg_id. Time is left for the caller. ok is false when f is not a
// receipt or its status is unknown.
func ReceiptOf(f *Frame) (r message.Receipt, ok bool) {
	if f == nil || f.Type != TypeControl || f.Action != ActionPeerMessageStatus {
		return message.Receipt{}, false
	}
	s, ok := StatusOf(f.Status, f.StatusDetail)
	if !ok {
		return message.Receipt{}, false
	}
	r = message.Receipt{MsgID: f.OrigMsgID, Status: s, Reason: f.Reason, Detail: f.StatusDetail, From: f.From}
	if s == message.StatusDropped {
		r.DropReason, _ = message.ParseDropReason(f.DropReason) // an unknown reason reads as none
	}
	return r, true
}

// Line is one parsed line: exactly one of Auth and Frame is set.
type Line struct {
	Auth  *Auth
	Frame *Frame
}

// Errors from ParseLine. A receiver skips the line in every case (Claude Code
// skips unparseable lines and ignores frames it does not understand); only a
// receiver that requires auth treats a bad first line as a failed auth.
var (
	ErrBlankLine    = errors.New("blank line")
	ErrNotObject    = errors.New("line is not a JSON object")
	ErrSyntax       = errors.New("line is not valid JSON")
	ErrDuplicateKey = errors.New("line repeats a key")
	ErrMissingType  = errors.New(`line has no string "type"`)
	ErrUnknownType  = errors.New("line has a type other than auth, user or control")
	ErrBadField     = errors.New("line has a field of the wrong JSON type")
	ErrNoContent    = errors.New("user frame has no message content")
)

// ParseLine reads one line (without its newline; the caller enforces the size
// cap first). It is stricter than Claude Code, which never sends what is
// refused here:
//
//   - invalid UTF-8 is refused (ErrInvalidUTF8) rather than replaced;
//   - a repeated key anywhere is refused (ErrDuplicateKey) rather than the
//     last one winning, so no two parsers can read one line two ways;
//   - nesting deeper than jsonx.MaxDepth is refused (ErrSyntax, also
//     jsonx.ErrTooDeep) by a scan that allocates nothing, before any parse;
//   - keys match exactly, case included, as in JavaScript (encoding/json
//     alone would let "TYPE" fill Type);
//   - a known field of the wrong JSON type is refused (ErrBadField); null
//     counts as absent;
//   - a user frame must carry message.content as a non-empty string
//     (ErrNoContent); Claude Code ignores such frames too.
//
// An auth line without a token parses, with Token "": it authenticates
// nothing.
func ParseLine(b []byte) (Line, error) {
	if !utf8.Valid(b) {
		return Line{}, ErrInvalidUTF8
	}
	// Before any parser allocates: a frame is 3 levels deep at most.
	if !jsonx.WithinDepth(b, jsonx.MaxDepth) {
		return Line{}, fmt.Errorf("%w: %w", ErrSyntax, jsonx.ErrTooDeep)
	}
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		return Line{}, ErrBlankLine
	}
	if trimmed[0] != '{' {
		if !json.Valid(trimmed) {
			return Line{}, ErrSyntax
		}
		return Line{}, ErrNotObject
	}
	if err := jsonx.CheckUniqueKeys(trimmed, ErrSyntax, ErrDuplicateKey); err != nil {
		return Line{}, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return Line{}, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	var typ string
	if raw, ok := obj["type"]; !ok || unmarshalField(raw, &typ) != nil || isNull(raw) {
		return Line{}, ErrMissingType
	}
	switch typ {
	case TypeAuth:
		a := Auth{Type: TypeAuth}
		if raw, ok := obj["token"]; ok && !isNull(raw) && unmarshalField(raw, &a.Token) != nil {
			return Line{}, fmt.Errorf("%w: token", ErrBadField)
		}
		return Line{Auth: &a}, nil
	case TypeUser, TypeControl:
		f := &Frame{Type: typ}
		if err := f.decode(obj); err != nil {
			return Line{}, err
		}
		if typ == TypeUser && (f.Message == nil || f.Message.Content == "") {
			return Line{}, ErrNoContent
		}
		return Line{Frame: f}, nil
	}
	return Line{}, fmt.Errorf("%w: %q", ErrUnknownType, typ)
}

// frameParts is a frame being decoded, with the raw values of the fields
// decoded in a second step.
type frameParts struct {
	f         *Frame
	msg, atts json.RawMessage
}

// frameFields is where each key of a frame goes, by exact key: one table
// for every frame, rather than a map of destinations built per line.
var frameFields = map[string]func(p *frameParts) any{
	"msgV": func(p *frameParts) any { return &p.f.MsgV }, "msg_id": func(p *frameParts) any { return &p.f.MsgID },
	"uuid": func(p *frameParts) any { return &p.f.UUID }, "message": func(p *frameParts) any { return &p.msg },
	"priority": func(p *frameParts) any { return &p.f.Priority }, "from": func(p *frameParts) any { return &p.f.From },
	"session_id": func(p *frameParts) any { return &p.f.SessionID }, "from_plugin": func(p *frameParts) any { return &p.f.FromPlugin },
	"local_chain": func(p *frameParts) any { return &p.f.LocalChain }, "file_attachments": func(p *frameParts) any { return &p.atts },
	"action": func(p *frameParts) any { return &p.f.Action }, "status": func(p *frameParts) any { return &p.f.Status },
	"status_detail": func(p *frameParts) any { return &p.f.StatusDetail }, "reason": func(p *frameParts) any { return &p.f.Reason },
	"orig_msg_id": func(p *frameParts) any { return &p.f.OrigMsgID }, "drop_reason": func(p *frameParts) any { return &p.f.DropReason },
	"dropped_msg_ids": func(p *frameParts) any { return &p.f.DroppedMsgIDs }, "state": func(p *frameParts) any { return &p.f.State },
	"finished_at": func(p *frameParts) any { return &p.f.FinishedAt }, "detail": func(p *frameParts) any { return &p.f.Detail },
	"from_mode": func(p *frameParts) any { return &p.f.FromMode }, "name": func(p *frameParts) any { return &p.f.Name },
	"slugs": func(p *frameParts) any { return &p.f.Slugs }, "sent_at": func(p *frameParts) any { return &p.f.SentAt },
	"claimed_at": func(p *frameParts) any { return &p.f.ClaimedAt }, "requester": func(p *frameParts) any { return &p.f.Requester },
	"yielded": func(p *frameParts) any { return &p.f.Yielded }, "not_held": func(p *frameParts) any { return &p.f.NotHeld },
	"refused": func(p *frameParts) any { return &p.f.Refused }, "stopped": func(p *frameParts) any { return &p.f.Stopped },
}

func (f *Frame) decode(obj map[string]json.RawMessage) error {
	p := frameParts{f: f}
	for k, raw := range obj {
		dst, ok := frameFields[k]
		if !ok || isNull(raw) {
			continue
		}
		if err := unmarshalField(raw, dst(&p)); err != nil {
			return fmt.Errorf("%w: %s", ErrBadField, k)
		}
	}
	msg, atts := p.msg, p.atts
	if msg != nil {
		f.Message = &UserMessage{}
		if err := decodeObject(msg, "message", map[string]any{
			"role": &f.Message.Role, "content": &f.Message.Content,
		}); err != nil {
			return err
		}
	}
	if atts != nil {
		var list []json.RawMessage
		if err := json.Unmarshal(atts, &list); err != nil {
			return fmt.Errorf("%w: file_attachments", ErrBadField)
		}
		for _, raw := range list {
			var a message.Attachment
			if err := decodeObject(raw, "file_attachments", map[string]any{
				"path": &a.Path, "file_name": &a.FileName, "file_size": &a.FileSize,
				"sha256": &a.SHA256, "media_type": &a.MediaType,
			}); err != nil {
				return err
			}
			f.FileAttachments = append(f.FileAttachments, a)
		}
	}
	return nil
}

// decodeObject decodes raw, which must be a JSON object, into fields by exact
// key.
func decodeObject(raw json.RawMessage, name string, fields map[string]any) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return fmt.Errorf("%w: %s", ErrBadField, name)
	}
	return decodeFields(obj, fields)
}

// decodeFields fills each destination from the key that matches it exactly.
// Absent keys and null values leave it alone.
func decodeFields(obj map[string]json.RawMessage, fields map[string]any) error {
	for k, dst := range fields {
		raw, ok := obj[k]
		if !ok || isNull(raw) {
			continue
		}
		if err := unmarshalField(raw, dst); err != nil {
			return fmt.Errorf("%w: %s", ErrBadField, k)
		}
	}
	return nil
}

// unmarshalField is json.Unmarshal of one member's value, raw, which the
// whole line's parse has already found to be valid JSON: a string without
// escapes is its bytes between the quotes (most of a frame's fields), a
// value kept raw for a second step is taken as it is; anything else goes
// through encoding/json.
func unmarshalField(raw json.RawMessage, dst any) error {
	switch d := dst.(type) {
	case *string:
		if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && plain(raw[1:n-1]) {
			*d = string(raw[1 : n-1])
			return nil
		}
	case *json.RawMessage:
		if d != nil && len(raw) > 0 {
			*d = raw
			return nil
		}
	}
	return json.Unmarshal(raw, dst)
}

// plain reports whether b is a JSON string's inside that reads as itself:
// valid UTF-8 with no escape, quote or control character.
func plain(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '\\' || c == '"' {
			return false
		}
	}
	return utf8.Valid(b)
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// newMsgID returns a random (version 4) UUID, as Claude Code's msg_id is.
func newMsgID() string { return uuid.NewString() }
