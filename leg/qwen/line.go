package qwen

import (
	"errors"
	"fmt"
)

// Line is one parsed line: exactly one of Auth, User and Status is set.
type Line struct {
	Auth   *Auth
	User   *UserFrame
	Status *StatusFrame
}

// Errors from ParseLine, besides the decoding errors (ErrInvalidUTF8,
// ErrSyntax, ErrNotObject, ErrDuplicateKey, ErrBadField). A reader skips the
// line in every case, except that a connection whose first non-blank line
// is not an auth line with an accepted token is closed.
var (
	ErrBlankLine     = errors.New("blank line")
	ErrVersion       = errors.New(`line has no numeric "msgV" at or below 1`)
	ErrUnknownType   = errors.New(`line has a "type" other than auth, user or control`)
	ErrNoToken       = errors.New("auth line has no token")
	ErrBadMsgID      = errors.New(`"msgId" is not a valid message id`)
	ErrBadRole       = errors.New(`user frame's message.role is not "user"`)
	ErrNoContent     = errors.New("user frame has no message content")
	ErrUnknownAction = errors.New(`control frame's action is not "delivery_status"`)
	ErrUnknownStatus = errors.New("unknown delivery status")
	ErrNoOrigMsgID   = errors.New(`receipt has no "origMsgId"`)
	// ErrBadHopChain is only ever a writer's error: a reader drops a bad
	// chain and keeps the frame.
	ErrBadHopChain = errors.New("hop chain is not 1 to 32 entries of 24 lower-case hex characters")
)

// IsBlank reports whether a line holds nothing but white space (as
// JavaScript's trim sees it). Qwen Code's line reader skips such lines
// before anything else looks at them, the auth check included.
func IsBlank(line []byte) bool { return jsTrim(string(line)) == "" }

// ParseLine reads one line (without its newline) as Qwen Code's inbox does,
// and more strictly where no genuine sender would notice:
//
//   - invalid UTF-8 is refused rather than replaced, and so is a key
//     repeated anywhere (JSON.parse lets the last one win);
//   - keys match exactly, case included;
//   - a known string field of another JSON type is refused (ErrBadField)
//     where Qwen Code would drop the field and deliver; null is absent;
//   - priority must be a string when present.
//
// Like Qwen Code it accepts any msgV at or below 1, reads an unknown
// fromMode as none and an unknown priority as next, and on a dropped
// receipt drops an unknown dropReason and keeps only the valid droppedMsgIds
// (the first 256). Unknown fields are ignored. Our own hopChain extension
// is read when it is valid (ValidHopChain) and otherwise dropped silently,
// whole: a frame is never refused over a field Qwen Code does not know. An auth line needs only msgV,
// type and a non-empty string token; a user or control line also needs a
// valid msgId.
func ParseLine(b []byte) (Line, error) {
	if IsBlank(b) {
		return Line{}, ErrBlankLine
	}
	o, err := decodeObject(b)
	if err != nil {
		return Line{}, err
	}
	if v, ok := o.num("msgV"); !ok || v > FrameVersion {
		return Line{}, ErrVersion
	}
	typ, _ := o.str("type")
	switch typ {
	case lineTypeWire[LineAuth]:
		tok, ok := o.str("token")
		if !ok || tok == "" {
			return Line{}, ErrNoToken
		}
		return Line{Auth: &Auth{Token: Token(tok)}}, nil
	case lineTypeWire[LineUser], lineTypeWire[LineControl]:
	default:
		return Line{}, fmt.Errorf("%w: %q", ErrUnknownType, typ)
	}
	id, _ := o.str("msgId")
	if !ValidMsgID(id) {
		return Line{}, fmt.Errorf("%w: %q", ErrBadMsgID, id)
	}
	if typ == lineTypeWire[LineUser] {
		f, err := parseUser(o, id)
		if err != nil {
			return Line{}, err
		}
		return Line{User: &f}, nil
	}
	f, err := parseStatus(o, id)
	if err != nil {
		return Line{}, err
	}
	return Line{Status: &f}, nil
}

func parseUser(o object, id string) (UserFrame, error) {
	f := UserFrame{MsgID: id}
	if o.kind("message") != kindObject {
		return UserFrame{}, fmt.Errorf("%w: message", ErrNoContent)
	}
	msg, err := decodeObject(o["message"])
	if err != nil {
		return UserFrame{}, fmt.Errorf("message: %w", err)
	}
	if role, _ := msg.str("role"); role != "user" {
		return UserFrame{}, ErrBadRole
	}
	if f.Content, _ = msg.str("content"); f.Content == "" {
		return UserFrame{}, ErrNoContent
	}
	var from, reply, name, mode, prio string
	for _, fld := range []struct {
		key string
		dst *string
	}{{"from", &from}, {"replyToken", &reply}, {"fromName", &name}, {"fromMode", &mode}, {"priority", &prio}} {
		if *fld.dst, err = o.optString(fld.key); err != nil {
			return UserFrame{}, err
		}
	}
	f.From, f.ReplyToken, f.FromName, f.FromMode = from, Token(reply), name, wireMode(mode)
	if prio == priorityWire[PriorityNow] {
		f.Priority = PriorityNow
	}
	switch o.kind("toSessionId") {
	case kindAbsent, kindNull:
	case kindString:
		f.ToSessionID, _ = o.str("toSessionId")
		f.pinnedEmpty = f.ToSessionID == ""
	default:
		return UserFrame{}, fmt.Errorf("%w: toSessionId", ErrBadField)
	}
	f.HopChain = parseHopChain(o)
	return f, nil
}

func parseStatus(o object, id string) (StatusFrame, error) {
	f := StatusFrame{MsgID: id}
	if action, _ := o.str("action"); action != ActionDeliveryStatus {
		return StatusFrame{}, fmt.Errorf("%w: %q", ErrUnknownAction, action)
	}
	st, _ := o.str("status")
	var err error
	if f.Status, err = ParseStatus(st); err != nil {
		return StatusFrame{}, err
	}
	if f.OrigMsgID, _ = o.str("origMsgId"); f.OrigMsgID == "" {
		return StatusFrame{}, ErrNoOrigMsgID
	}
	if f.From, err = o.optString("from"); err != nil {
		return StatusFrame{}, err
	}
	if f.Reason, err = o.optString("reason"); err != nil {
		return StatusFrame{}, err
	}
	if f.Status != StatusDropped {
		return f, nil // dropReason and droppedMsgIds mean nothing here
	}
	reason, err := o.optString("dropReason")
	if err != nil {
		return StatusFrame{}, err
	}
	f.DropReason, _ = ParseDropReason(reason) // unknown reads as none
	switch o.kind("droppedMsgIds") {
	case kindAbsent, kindNull:
	case kindArray:
		var items []any
		if err := decodeArray(o["droppedMsgIds"], &items); err != nil {
			return StatusFrame{}, fmt.Errorf("%w: droppedMsgIds", ErrBadField)
		}
		for _, it := range items {
			if s, ok := it.(string); ok && ValidMsgID(s) && len(f.DroppedMsgIDs) < MaxDroppedMsgIDs {
				f.DroppedMsgIDs = append(f.DroppedMsgIDs, s)
			}
		}
	default:
		return StatusFrame{}, fmt.Errorf("%w: droppedMsgIds", ErrBadField)
	}
	return f, nil
}
