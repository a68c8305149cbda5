package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// The fast path decodes a message in one pass over its bytes with a
// streaming tokenizer: no reflection, no second scan of nested raw parts,
// and every string that needs no unescaping is a substring of one copy of
// the line. It takes only what it is sure of: any doubt (a name that
// differs from a known one only in case, a duplicate name, invalid UTF-8,
// a field of an unexpected shape) gives up and the caller decodes again
// with encoding/json, whose answer (and error) is the reference. So the
// two agree wherever the fast path answers; FuzzFastDecode holds them to it.

// fast is one decoding's state, pooled.
type fast struct {
	dec jsontext.Decoder
	in  bytes.Buffer // the decoder reads straight from its bytes
	raw []byte       // what the decoder reads; Raw fields are its sub-slices
	// src holds the same bytes as a string from src[base:], so a field
	// without escapes costs no allocation.
	src    string
	base   int
	blocks []Block // content lists being read, innermost last
}

var fastPool = sync.Pool{New: func() any { return new(fast) }}

func getFast(raw []byte, src string, base int) *fast {
	f := fastPool.Get().(*fast)
	f.raw, f.src, f.base = raw, src, base
	f.in = *bytes.NewBuffer(raw)
	f.dec.Reset(&f.in)
	return f
}

func putFast(f *fast) {
	clear(f.blocks)
	f.in, f.raw, f.src, f.blocks = bytes.Buffer{}, nil, "", f.blocks[:0]
	f.dec.Reset(&f.in)
	fastPool.Put(f)
}

// off is where the decoder stands in raw: just past the last token read.
func (f *fast) off() int { return int(f.dec.InputOffset()) }

// next is where the value the decoder peeked at starts in raw: past the
// whitespace and colon before it, which the decoder has checked.
func (f *fast) next() int {
	i := f.off()
	for i < len(f.raw) && strings.IndexByte(" \t\r\n:", f.raw[i]) >= 0 {
		i++
	}
	return i
}

// value reads the next value whole and returns its place in raw.
func (f *fast) value() (start, end int, ok bool) {
	v, err := f.dec.ReadValue()
	if err != nil {
		return 0, 0, false
	}
	end = f.off()
	return end - len(v), end, true
}

// rawValue reads the next value as a sub-slice of raw.
func (f *fast) rawValue(dst *json.RawMessage) bool {
	start, end, ok := f.value()
	*dst = f.raw[start:end:end]
	return ok
}

// str reads a string (null leaves dst as it is, as encoding/json does).
func (f *fast) str(dst *string) bool {
	switch f.dec.PeekKind() {
	case 'n':
		return f.skip()
	case '"':
	default:
		return false
	}
	start, end, ok := f.value()
	if !ok {
		return false
	}
	q := f.raw[start+1 : end-1]
	if bytes.IndexByte(q, '\\') < 0 {
		*dst = f.src[f.base+start+1 : f.base+end-1]
		return true
	}
	b, err := jsontext.AppendUnquote(nil, f.raw[start:end])
	*dst = string(b)
	return err == nil
}

// number reads a number's text; null reports ok with no text.
func (f *fast) number() ([]byte, bool) {
	switch f.dec.PeekKind() {
	case 'n':
		return nil, f.skip()
	case '0':
		start, end, ok := f.value()
		return f.raw[start:end], ok
	}
	return nil, false
}

func (f *fast) int64(dst *int64) bool {
	t, ok := f.number()
	if !ok || t == nil {
		return ok
	}
	n, err := strconv.ParseInt(string(t), 10, 64)
	*dst = n
	return err == nil
}

func (f *fast) int(dst *int) bool {
	var n int64
	ok := f.int64(&n)
	*dst = int(n)
	return ok && int64(*dst) == n
}

func (f *fast) float64(dst *float64) bool {
	t, ok := f.number()
	if !ok || t == nil {
		return ok
	}
	n, err := strconv.ParseFloat(string(t), 64)
	*dst = n
	return err == nil
}

func (f *fast) bool(dst *bool) bool {
	switch f.dec.PeekKind() {
	case 'n':
		return f.skip()
	case 't', 'f':
		t, err := f.dec.ReadToken()
		if err != nil {
			return false
		}
		*dst = t.Bool()
		return true
	}
	return false
}

func (f *fast) skip() bool { return f.dec.SkipValue() == nil }

// null reads a null if one is next.
func (f *fast) null() (bool, bool) {
	if f.dec.PeekKind() != 'n' {
		return false, true
	}
	return true, f.skip()
}

// object reads an object, handing each member's name to field, which reads
// the value. An unknown name is skipped, unless encoding/json would match
// it to a known one regardless of case.
func (f *fast) object(known []string, field func(name []byte) (handled, ok bool)) bool {
	if t, err := f.dec.ReadToken(); err != nil || t.Kind() != '{' {
		return false
	}
	for f.dec.PeekKind() == '"' {
		start, end, ok := f.value()
		if !ok {
			return false
		}
		name := f.raw[start+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return false
		}
		handled, ok := field(name)
		if !ok {
			return false
		}
		if handled {
			continue
		}
		for _, k := range known {
			if strings.EqualFold(string(name), k) {
				return false
			}
		}
		if !f.skip() {
			return false
		}
	}
	t, err := f.dec.ReadToken()
	return err == nil && t.Kind() == '}'
}

// fields of a message a kind may use, as envelope's tags spell them.
var messageNames = []string{"type", "uuid", "session_id", "created_at", "parent_tool_use_id", "message",
	"file_attachments", "tool_use_result", "request_id", "request", "response", "subtype", "result",
	"duration_ms", "duration_api_ms", "num_turns", "total_cost_usd", "is_error", "stop_reason",
	"modelUsage", "permission_denials", "usage"}

// parts is what reading a message object gathers; build makes the
// Message once its default type is known.
type parts struct {
	env                         envelope
	body                        body
	stop                        string
	m                           Message
	hasBody, bodyErr, hasAttach bool
}

// message reads one message object, the whole of raw.
func (f *fast) message(defaultType string) (Message, bool) {
	var p parts
	if !f.messageParts(&p) || f.off() != len(f.raw) {
		return Message{}, false
	}
	return p.build(f.raw, defaultType)
}

// messageParts reads the message object that comes next.
func (f *fast) messageParts(p *parts) bool {
	env, m := &p.env, &p.m
	ok := f.object(messageNames, func(name []byte) (bool, bool) {
		switch string(name) {
		case "type":
			return true, f.str(&env.Type)
		case "uuid":
			return true, f.str(&m.UUID)
		case "session_id":
			return true, f.str(&m.SessionID)
		case "created_at":
			return true, f.str(&m.CreatedAt)
		case "parent_tool_use_id":
			return true, f.str(&m.ParentToolUseID)
		case "message":
			null, ok := f.null()
			if null || !ok {
				return true, ok
			}
			p.hasBody = true
			p.body, ok = f.body()
			p.bodyErr = !ok
			return true, ok
		case "file_attachments":
			null, ok := f.null()
			p.hasAttach = !null
			return true, ok
		case "tool_use_result":
			return true, f.rawValue(&env.ToolUseResult)
		case "request_id":
			return true, f.str(&env.RequestID)
		case "request":
			return true, f.rawValue(&env.Request)
		case "response":
			return true, f.rawValue(&env.Response)
		case "subtype":
			return true, f.str(&env.Subtype)
		case "result":
			return true, f.str(&env.Result)
		case "duration_ms":
			return true, f.float64(&env.DurationMS)
		case "duration_api_ms":
			return true, f.float64(&env.DurationAPIMS)
		case "num_turns":
			return true, f.int(&env.NumTurns)
		case "total_cost_usd":
			return true, f.float64(&env.TotalCostUSD)
		case "is_error":
			return true, f.bool(&env.IsError)
		case "stop_reason":
			return true, f.str(&p.stop)
		case "modelUsage":
			return true, f.rawValue(&env.ModelUsage)
		case "permission_denials":
			return true, f.rawValue(&env.PermissionDenials)
		case "usage":
			u, ok := f.usage()
			env.Usage = u
			return true, ok
		}
		return false, true
	})
	return ok && !p.bodyErr && !p.hasAttach
}

// build makes the message read into p, whose bytes are raw.
func (p *parts) build(raw []byte, defaultType string) (Message, bool) {
	env, body, m := &p.env, &p.body, p.m
	if env.Type == "" {
		env.Type = defaultType
	}
	if env.Type == "" {
		return Message{}, false
	}
	m.Kind, m.Type, m.Raw = lookup[Kind](kindWire[:], env.Type), env.Type, raw
	var err error
	switch m.Kind {
	case KindAssistant:
		m.Assistant = &Assistant{}
		if p.hasBody {
			*m.Assistant = Assistant{ID: body.id, Model: body.model, Role: body.role, Content: body.content,
				StopReason: body.stopReason, StopSequence: body.stopSequence, Usage: body.usage}
		}
	case KindUser:
		m.User = &User{ToolUseResult: env.ToolUseResult}
		if p.hasBody {
			m.User.Role, m.User.Content = body.role, body.content
		}
	case KindResult:
		m.Result = &Result{
			Subtype: env.Subtype, Result: env.Result, DurationMS: env.DurationMS,
			DurationAPIMS: env.DurationAPIMS, NumTurns: env.NumTurns, TotalCostUSD: env.TotalCostUSD,
			IsError: env.IsError, StopReason: p.stop, ModelUsage: env.ModelUsage,
			PermissionDenials: env.PermissionDenials, Usage: env.Usage,
		}
	case KindSystem:
		m.System = &System{Subtype: env.Subtype}
	case KindControlRequest:
		m.ControlRequest, err = decodeRequest(env.RequestID, env.Request)
	case KindControlResponse:
		m.ControlResponse, err = decodeResponse(env.Response)
	case KindControlCancelRequest:
		m.Cancel = &Cancel{RequestID: env.RequestID}
	}
	return m, err == nil
}

// decodeFast decodes the message object line (already a private copy,
// kept as Raw); src is the same bytes as a string when the caller has
// them, else "".
func decodeFast(line []byte, src string, defaultType string) (Message, bool) {
	if src == "" {
		src = string(line)
	}
	f := getFast(line, src, 0)
	defer putFast(f)
	return f.message(defaultType)
}

var v2Names = []string{"event_id", "event_type", "sequence_num", "source", "created_at", "payload"}

// decodeV2Fast decodes a v2 event whose data, trimmed, is raw (a private
// copy) and starts at src[base:].
func decodeV2Fast(raw []byte, src string, base int, sseID string) (V2Event, bool) {
	f := getFast(raw, src, base)
	defer putFast(f)
	var (
		out          V2Event
		seqRaw       json.RawMessage
		ps, pe       int
		payloadIsObj bool
		payload      parts
	)
	ok := f.object(v2Names, func(name []byte) (bool, bool) {
		switch string(name) {
		case "event_id":
			return true, f.str(&out.EventID)
		case "event_type":
			return true, f.str(&out.EventType)
		case "sequence_num":
			return true, f.rawValue(&seqRaw)
		case "source":
			return true, f.str(&out.Source)
		case "created_at":
			return true, f.str(&out.CreatedAt)
		case "payload":
			switch f.dec.PeekKind() {
			case 'n':
				return true, f.skip()
			case '{':
				// Read in place, in the envelope's one pass; the message
				// is built once event_type, which may come later, is known.
				ps = f.next()
				ok := f.messageParts(&payload)
				pe, payloadIsObj = f.off(), true
				return true, ok
			}
			return true, false
		}
		return false, true
	})
	if !ok || f.off() != len(raw) {
		return V2Event{}, false
	}
	var seq uint64
	switch {
	case len(seqRaw) > 0 && seqRaw[0] >= '0' && seqRaw[0] <= '9':
		n, err := strconv.ParseUint(string(seqRaw), 10, 64)
		if err != nil {
			return V2Event{}, false
		}
		seq = n
	default:
		n, has, err := sequence(seqRaw)
		if err != nil {
			return V2Event{}, false
		}
		if !has {
			if n, has = decimal(sseID); !has {
				return V2Event{}, false
			}
		}
		seq = n
	}
	out.SequenceNum = seq
	var m Message
	if payloadIsObj {
		m, ok = payload.build(raw[ps:pe:pe], out.EventType)
	} else { // a bare message: the envelope is the message
		f.in = *bytes.NewBuffer(raw)
		f.dec.Reset(&f.in)
		m, ok = f.message(out.EventType)
	}
	if !ok {
		return V2Event{}, false
	}
	if out.EventType == "" {
		out.EventType = m.Type
	}
	if out.CreatedAt == "" {
		out.CreatedAt = m.CreatedAt
	}
	out.Message = m
	return out, true
}
