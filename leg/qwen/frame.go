package qwen

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/message"
)

// An inbox connection carries newline-delimited JSON objects: an auth line
// first when the inbox has a token, then frames, each a user message or a
// delivery_status receipt. Receipts travel on their own connection to the
// sender's inbox, never back on the one they answer.

// FrameVersion is the msgV we write. A reader drops a line whose msgV is
// above it; any number at or below it (0, -1, 0.5) is read as current.
const FrameVersion = 1

// Limits of the wire, as Qwen Code enforces them.
const (
	// MaxFrameUnits caps one line, in UTF-16 code units (JavaScript's
	// String.length). A reader drops the connection once more than this has
	// arrived without a newline; a sender refuses to write a longer frame.
	MaxFrameUnits = 1 << 20
	// MaxDroppedMsgIDs caps droppedMsgIds on a dropped receipt.
	MaxDroppedMsgIDs = 256
	// maxMsgIDLen is the longest msgId the grammar allows.
	maxMsgIDLen = 64
)

// ValidMsgID reports whether s is an id a receiver accepts:
// ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$, and not one that canonicalises to "all"
// (a word the /peers commands reserve).
func ValidMsgID(s string) bool {
	if len(s) == 0 || len(s) > maxMsgIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '-') {
			return false
		}
	}
	return CanonicalMsgID(s) != "all"
}

// CanonicalMsgID is the form under which ids are compared: dashes removed,
// lower-cased. A receiver's settled-id memory and a sender's ledger key on
// it, so "AB-c" and "abc" are one id.
func CanonicalMsgID(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' {
			continue
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	if !isASCII(b) {
		// Qwen Code lower-cases with toLowerCase; only receipts from
		// strangers carry such ids, and they match nothing we sent.
		return lowerUnicode(string(b))
	}
	return string(b)
}

// NewMsgID returns a fresh random (version 4) UUID.
func NewMsgID() string { return uuid.NewString() }

// Auth is the first line of a connection to an inbox with a token.
type Auth struct {
	Token Token
}

// Sender is who we are when we send: our inbox (where receipts come back),
// its token (which the receiver presents on them), our display name and our
// review class.
type Sender struct {
	IPCPath  string
	IPCToken Token
	Name     string
	Mode     message.Mode
}

// UserFrame is a message for a session.
type UserFrame struct {
	MsgID      string
	From       string       // the sender's inbox; "" means no receipts
	ReplyToken Token        // what the receiver presents on receipts to From
	FromName   string       // a claim; shown flattened
	FromMode   message.Mode // a claim; ModeUnknown asserts nothing and is held
	// ToSessionID is the session the sender means; a receiver holding
	// another answers misaddressed. "" sends none (see Pin).
	ToSessionID string
	Priority    Priority
	Content     string // non-empty

	// HopChain is the gateway's own extension, "hopChain": the hop tokens of
	// the relays the message passed through, oldest first, as the Claude
	// Code envelope's hop-chain carries them, so that a message bounced
	// between aliases is seen looping whichever legs it crosses. Qwen Code
	// has no such field and ignores it (unknown fields are ignored, spec
	// §4); a chain that is not 1 to message.MaxHopChain tokens is dropped on read.
	HopChain []string

	// pinnedEmpty records a frame that carried toSessionId "": a pin that
	// matches no session, unlike no pin at all.
	pinnedEmpty bool
}

// Pin returns the toSessionId the frame carries, and whether it carries
// one at all.
func (f UserFrame) Pin() (id string, ok bool) {
	return f.ToSessionID, f.ToSessionID != "" || f.pinnedEmpty
}

// NewUserFrame builds what Qwen Code's send_message writes to the session
// rec describes: a fresh msgId, our inbox and its token for receipts, our
// name and review class (left out when unknown), toSessionId pinned to the
// record's session, priority next.
func NewUserFrame(self Sender, to Record, content string) UserFrame {
	return userFrame(NewMsgID(), self, to, content)
}

// userFrame is NewUserFrame under the msgId id.
func userFrame(id string, self Sender, to Record, content string) UserFrame {
	return UserFrame{
		MsgID: id, From: self.IPCPath, ReplyToken: self.IPCToken,
		FromName: self.Name, FromMode: self.Mode, ToSessionID: to.SessionID,
		Priority: PriorityNext, Content: content,
	}
}

// Validate reports whether a receiver would accept f.
func (f UserFrame) Validate() error {
	switch {
	case !ValidMsgID(f.MsgID):
		return fmt.Errorf("%w: %q", ErrBadMsgID, f.MsgID)
	case f.Content == "":
		return ErrNoContent
	case int(f.Priority) >= len(priorityWire):
		return fmt.Errorf("%w: priority", ErrBadField)
	case f.FromMode > message.ModePrompting:
		return fmt.Errorf("%w: fromMode", ErrBadField)
	case f.HopChain != nil && !ValidHopChain(f.HopChain):
		return ErrBadHopChain
	}
	return validStrings(f.From, string(f.ReplyToken), f.FromName, f.ToSessionID, f.Content)
}

// StatusFrame is a delivery_status receipt about the message OrigMsgID.
type StatusFrame struct {
	MsgID     string
	Status    Status
	OrigMsgID string
	From      string // the receiver's inbox, for the record; receipts are not answered
	Reason    string // free text for a person; never compare it
	// DropReason and DroppedMsgIDs go with StatusDropped only, and are
	// ignored on any other status. DroppedMsgIDs are further ids the same
	// receipt settles: a burst is answered with one receipt.
	DropReason    message.DropReason
	DroppedMsgIDs []string
}

// statusReasons is the text we send with each status. Qwen Code's CLI and
// SDK each word these their own way, and receivers never compare them.
var statusReasons = [...]string{
	StatusHeld:         "Your message is held until the recipient's user reviews it.",
	StatusDelivered:    "Your message was queued for the recipient session.",
	StatusDenied:       "The recipient's user declined your message; it was not delivered.",
	StatusRefused:      "The recipient does not accept messages from other sessions; nobody saw this one. Do not re-send it.",
	StatusExpired:      "Your message was not delivered: it waited too long, or the recipient closed first.",
	StatusMisaddressed: "That address now belongs to another session; look the recipient up again before re-sending.",
	StatusDropped:      "Your message was turned away at the recipient's inbox before anyone saw it; treat it as unsent and fold what matters into one later message.",
}

// NewStatusFrame builds the receipt for origMsgID with a fresh msgId, sent
// from our inbox at from, with our reason text for st.
func NewStatusFrame(st Status, origMsgID, from string) StatusFrame {
	f := StatusFrame{MsgID: NewMsgID(), Status: st, OrigMsgID: origMsgID, From: from}
	if int(st) < len(statusReasons) {
		f.Reason = statusReasons[st]
	}
	return f
}

// NewDropFrame builds a dropped receipt about origMsgID that also settles
// dropped (at most MaxDroppedMsgIDs of them are kept).
func NewDropFrame(origMsgID, from string, reason message.DropReason, dropped []string) StatusFrame {
	f := NewStatusFrame(StatusDropped, origMsgID, from)
	f.DropReason = reason
	if len(dropped) > MaxDroppedMsgIDs {
		dropped = dropped[:MaxDroppedMsgIDs]
	}
	if len(dropped) > 0 {
		f.DroppedMsgIDs = append([]string(nil), dropped...)
	}
	return f
}

// Settles lists every id the receipt settles: OrigMsgID, then, on a dropped
// receipt, DroppedMsgIDs.
func (f StatusFrame) Settles() []string {
	ids := []string{f.OrigMsgID}
	if f.Status == StatusDropped {
		ids = append(ids, f.DroppedMsgIDs...)
	}
	return ids
}

// Validate reports whether a receiver would accept f.
func (f StatusFrame) Validate() error {
	switch {
	case !ValidMsgID(f.MsgID):
		return fmt.Errorf("%w: %q", ErrBadMsgID, f.MsgID)
	case f.Status == 0 || int(f.Status) >= len(statusWire):
		return fmt.Errorf("%w: %d", ErrUnknownStatus, f.Status)
	case f.OrigMsgID == "":
		return ErrNoOrigMsgID
	case f.DropReason != 0 && !IsWireDrop(f.DropReason):
		return fmt.Errorf("%w: dropReason", ErrBadField)
	case len(f.DroppedMsgIDs) > MaxDroppedMsgIDs:
		return fmt.Errorf("%w: more than %d droppedMsgIds", ErrBadField, MaxDroppedMsgIDs)
	}
	for _, id := range f.DroppedMsgIDs {
		if !ValidMsgID(id) {
			return fmt.Errorf("%w: droppedMsgIds has %q", ErrBadMsgID, id)
		}
	}
	return validStrings(f.OrigMsgID, f.From, f.Reason)
}

func validStrings(ss ...string) error {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return ErrInvalidUTF8
		}
	}
	return nil
}

// The wire shapes, in the order Qwen Code's builders write the keys.
type (
	authWire struct {
		MsgV  int    `json:"msgV"`
		Type  string `json:"type"`
		Token string `json:"token"`
	}
	userMessageWire struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	userWire struct {
		MsgV        int             `json:"msgV"`
		MsgID       string          `json:"msgId"`
		Type        string          `json:"type"`
		From        string          `json:"from,omitempty"`
		ReplyToken  string          `json:"replyToken,omitempty"`
		FromName    string          `json:"fromName,omitempty"`
		FromMode    string          `json:"fromMode,omitempty"`
		ToSessionID *string         `json:"toSessionId,omitempty"`
		Priority    string          `json:"priority"`
		Message     userMessageWire `json:"message"`
		HopChain    []string        `json:"hopChain,omitempty"` // ours, after Qwen Code's keys
	}
	statusWireFrame struct {
		MsgV          int      `json:"msgV"`
		MsgID         string   `json:"msgId"`
		Type          string   `json:"type"`
		Action        string   `json:"action"`
		Status        string   `json:"status"`
		OrigMsgID     string   `json:"origMsgId"`
		From          string   `json:"from,omitempty"`
		Reason        string   `json:"reason,omitempty"`
		DropReason    string   `json:"dropReason,omitempty"`
		DroppedMsgIDs []string `json:"droppedMsgIds,omitempty"`
	}
)

// Frame is a line that can be written after the auth line.
type Frame interface {
	Marshal() ([]byte, error)
}

// Marshal encodes the auth line, without its newline. An empty token is an
// error: no inbox accepts it.
func (a Auth) Marshal() ([]byte, error) {
	if a.Token == "" {
		return nil, ErrNoToken
	}
	if err := validStrings(string(a.Token)); err != nil {
		return nil, err
	}
	if isHexToken(string(a.Token), len(a.Token)) {
		// What the encoder writes for a token that needs no escaping
		// (every token a genuine record holds), without the reflection.
		return append(append(append([]byte(nil), authPrefix...), a.Token...), `"}`...), nil
	}
	return a.encode()
}

// authPrefix is an auth line up to its token's value.
var authPrefix = `{"msgV":` + strconv.Itoa(FrameVersion) + `,"type":"` + lineTypeWire[LineAuth] + `","token":"`

// encode is the auth line as the encoder writes it.
func (a Auth) encode() ([]byte, error) {
	return jsonx.Marshal(authWire{MsgV: FrameVersion, Type: lineTypeWire[LineAuth], Token: string(a.Token)})
}

// Marshal encodes f as one line, without its newline. It refuses a frame
// that does not Validate.
func (f UserFrame) Marshal() ([]byte, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	w := userWire{
		MsgV: FrameVersion, MsgID: f.MsgID, Type: lineTypeWire[LineUser],
		From: f.From, ReplyToken: string(f.ReplyToken), FromName: f.FromName,
		FromMode: f.FromMode.String(), Priority: f.Priority.String(),
		Message:  userMessageWire{Role: "user", Content: f.Content},
		HopChain: f.HopChain,
	}
	if id, ok := f.Pin(); ok {
		w.ToSessionID = &id
	}
	return jsonx.Marshal(w)
}

// Marshal encodes f as one line, without its newline. It refuses a frame
// that does not Validate. DropReason and DroppedMsgIDs are written only on a
// dropped receipt.
func (f StatusFrame) Marshal() ([]byte, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	w := statusWireFrame{
		MsgV: FrameVersion, MsgID: f.MsgID, Type: lineTypeWire[LineControl],
		Action: ActionDeliveryStatus, Status: f.Status.String(), OrigMsgID: f.OrigMsgID,
		From: f.From, Reason: f.Reason,
	}
	if f.Status == StatusDropped {
		if f.DropReason != 0 {
			w.DropReason = f.DropReason.String()
		}
		w.DroppedMsgIDs = f.DroppedMsgIDs
	}
	return jsonx.Marshal(w)
}

// ErrFrameTooLarge: the frame is over MaxFrameUnits; no receiver reads it.
var ErrFrameTooLarge = errors.New("frame over the 1 MiB line limit")

// Payload is what one connection writes, in one write: the auth line when
// token is not empty (send it whenever the target's record has an
// ipcToken), then the frame, each ending in '\n'. A frame over
// MaxFrameUnits UTF-16 code units is ErrFrameTooLarge, as Qwen Code refuses
// it before dialing.
func Payload(token Token, f Frame) ([]byte, error) {
	line, err := f.Marshal()
	if err != nil {
		return nil, err
	}
	// No more UTF-16 units than bytes: only a line past the cap in bytes
	// needs counting.
	if len(line) > MaxFrameUnits {
		if n := utf16Len(string(line)); n > MaxFrameUnits {
			return nil, fmt.Errorf("%w: %d UTF-16 units", ErrFrameTooLarge, n)
		}
	}
	var auth []byte
	if token != "" {
		if auth, err = (Auth{Token: token}).Marshal(); err != nil {
			return nil, err
		}
	}
	out := make([]byte, 0, len(auth)+len(line)+2)
	if auth != nil {
		out = append(append(out, auth...), '\n')
	}
	return append(append(out, line...), '\n'), nil
}
