package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// V2Event is one event of the v2 stream (/v1/code/sessions/{id}/events/stream)
// or of its events list: an envelope with a sequence number around a message.
type V2Event struct {
	EventID     string
	EventType   string
	SequenceNum uint64
	Source      string // "worker" or "client"
	CreatedAt   string
	Message     Message
}

// Keep-alive event names on the v2 stream. Its ping's spelling is not
// known; both are treated as liveness only.
var keepAliveEvents = map[string]bool{"ping": true, "keep_alive": true}

// IsKeepAlive reports whether an SSE event carries liveness only: a comment,
// or an event named ping or keep_alive.
func (e Event) IsKeepAlive() bool { return e.Comment || keepAliveEvents[e.Type] }

// DecodeV2 decodes an SSE event's data as a v2 event. Two shapes are taken:
// the envelope {event_id, event_type, sequence_num, source, created_at,
// payload} with the message in payload (its type defaulting to event_type),
// or a bare message carrying sequence_num beside its type. sequence_num may be
// a JSON number or a decimal string; without one, the SSE id is used when it
// is decimal, and otherwise the event is refused with ErrNoSequence, since a
// resumable stream needs it.
func DecodeV2(ev Event) (V2Event, error) {
	data := []byte(ev.Data)
	raw := trimJSONSpace(data)
	if len(raw) > 0 && raw[0] == '{' && len(raw) <= MaxLine {
		lead := len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
		if v, ok := decodeV2Fast(raw, ev.Data, lead, ev.ID); ok {
			return v, nil
		}
	}
	return decodeV2Slow(raw, ev.ID)
}

// decodeV2Slow is DecodeV2 with encoding/json: the reference.
func decodeV2Slow(raw []byte, sseID string) (V2Event, error) {
	if len(raw) > MaxLine {
		return V2Event{}, fmt.Errorf("%w: %d bytes, cap %d", ErrLineTooLong, len(raw), MaxLine)
	}
	if len(raw) == 0 || raw[0] != '{' {
		if !json.Valid(raw) {
			return V2Event{}, ErrSyntax
		}
		return V2Event{}, ErrNotObject
	}
	var w struct {
		EventID     string          `json:"event_id"`
		EventType   string          `json:"event_type"`
		SequenceNum json.RawMessage `json:"sequence_num"`
		Source      string          `json:"source"`
		CreatedAt   string          `json:"created_at"`
		Payload     json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return V2Event{}, classify(err, "event")
	}
	out := V2Event{EventID: w.EventID, EventType: w.EventType, Source: w.Source, CreatedAt: w.CreatedAt}
	seq, ok, err := sequence(w.SequenceNum)
	if err != nil {
		return V2Event{}, err
	}
	if !ok {
		if seq, ok = decimal(sseID); !ok {
			return V2Event{}, ErrNoSequence
		}
	}
	out.SequenceNum = seq
	body := []byte(raw)
	if !isNull(w.Payload) {
		body = w.Payload
	}
	m, err := decodeSlow(body, w.EventType)
	if err != nil {
		return V2Event{}, fmt.Errorf("event %d: %w", seq, err)
	}
	if out.EventType == "" {
		out.EventType = m.Type
	}
	if out.CreatedAt == "" {
		out.CreatedAt = m.CreatedAt
	}
	out.Message = m
	return out, nil
}

// sequence reads sequence_num as a number or a decimal string.
func sequence(raw json.RawMessage) (uint64, bool, error) {
	if isNull(raw) {
		return 0, false, nil
	}
	s := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, false, classify(err, "sequence_num")
		}
	}
	n, ok := decimal(s)
	if !ok {
		return 0, false, fmt.Errorf("%w: sequence_num %s is not a non-negative integer", ErrField, raw)
	}
	return n, true, nil
}

func decimal(s string) (uint64, bool) {
	if s == "" || s[0] == '+' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// SequenceOf digs the sequence number out of a v2 envelope that may not
// decode as a whole, so a caller can step past it.
func SequenceOf(raw json.RawMessage) (uint64, bool) {
	var v struct {
		SequenceNum json.RawMessage `json:"sequence_num"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return 0, false
	}
	n, ok, err := sequence(v.SequenceNum)
	return n, ok && err == nil
}
