package qwen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/sessiongateway/gateway/internal/jsonx"
)

// Decoding errors shared by every parser here. Each parser wraps them with
// what it was reading and, for a field, the field's name.
var (
	ErrInvalidUTF8  = errors.New("not valid UTF-8")
	ErrSyntax       = errors.New("not valid JSON")
	ErrNotObject    = errors.New("not a JSON object")
	ErrDuplicateKey = errors.New("a key is repeated")
	ErrBadField     = errors.New("a field has the wrong JSON type")
)

// object is one JSON object's members by exact key. JavaScript matches keys
// exactly, case included; encoding/json alone would let "PID" fill pid.
type object map[string]json.RawMessage

// decodeObject reads b as one JSON object. It is stricter than JSON.parse,
// which no genuine writer notices: invalid UTF-8 is refused rather than
// replaced, and a repeated key anywhere is refused rather than the last one
// winning, so that no two readers can read one text two ways. Nesting deeper
// than jsonx.MaxDepth is refused before any parse, by a scan that allocates
// nothing.
func decodeObject(b []byte) (object, error) {
	if !utf8.Valid(b) {
		return nil, ErrInvalidUTF8
	}
	// Before any parser allocates: a frame is 2 levels deep at most.
	if !jsonx.WithinDepth(b, jsonx.MaxDepth) {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, jsonx.ErrTooDeep)
	}
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		if !json.Valid(b) {
			return nil, ErrSyntax
		}
		return nil, ErrNotObject
	}
	if err := jsonx.CheckUniqueKeys(b, ErrSyntax, ErrDuplicateKey); err != nil {
		return nil, err
	}
	var o object
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return o, nil
}

// kind is a JSON value's type, as JavaScript's typeof sees it after
// JSON.parse.
type kind uint8

const (
	kindAbsent kind = iota
	kindNull
	kindString
	kindNumber
	kindBool
	kindObject
	kindArray
)

func kindOf(raw json.RawMessage) kind {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 {
		return kindAbsent
	}
	switch t[0] {
	case 'n':
		return kindNull
	case '"':
		return kindString
	case 't', 'f':
		return kindBool
	case '{':
		return kindObject
	case '[':
		return kindArray
	}
	return kindNumber
}

func (o object) kind(key string) kind {
	raw, ok := o[key]
	if !ok {
		return kindAbsent
	}
	return kindOf(raw)
}

// str returns a string member. ok is false when the key is absent or not a
// string (JavaScript's typeof v === "string").
func (o object) str(key string) (s string, ok bool) {
	if o.kind(key) != kindString {
		return "", false
	}
	if err := json.Unmarshal(o[key], &s); err != nil {
		return "", false
	}
	return s, true
}

// num returns a number member as JavaScript reads it: a literal too large
// for a float64 is ±Infinity, not an error. ok is false when the key is
// absent or not a number.
func (o object) num(key string) (f float64, ok bool) {
	if o.kind(key) != kindNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(o[key])), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// optString is a member that must be a string when present: absent and
// null read as "", any other type is ErrBadField.
func (o object) optString(key string) (string, error) {
	switch o.kind(key) {
	case kindAbsent, kindNull:
		return "", nil
	case kindString:
		s, _ := o.str(key)
		return s, nil
	}
	return "", fmt.Errorf("%w: %s", ErrBadField, key)
}

// isSafeInt reports whether f is an integer JavaScript holds exactly.
func isSafeInt(f float64) bool {
	return f == math.Trunc(f) && math.Abs(f) <= 1<<53-1
}

// decodeArray decodes a JSON array (already known to be one) into v,
// numbers as json.Number so that none is out of range (see jsNumber).
func decodeArray(raw json.RawMessage, v *[]any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// jsNumber reads a decoded JSON number as JavaScript does: out of range is
// ±Infinity.
func jsNumber(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}
