package wire

import (
	"errors"
	"fmt"
)

// MaxLine is the default cap on one NDJSON line or SSE line, terminator
// excluded: 8 MiB. Tool results carry whole files, so the cap is generous, but
// a peer that never sends a newline must not make us buffer without end.
const MaxLine = 8 << 20

// maxContentDepth caps tool_result content nested inside tool_result content.
// Each level is decoded by its own json.Unmarshal, which would otherwise let a
// deep line cost time quadratic in its length.
const maxContentDepth = 4

// Decoding errors. Decode and the readers wrap them; callers match with errors.Is.
var (
	// ErrLineTooLong: a line exceeded the reader's cap (MaxLine by default).
	ErrLineTooLong = errors.New("wire: line too long")
	// ErrSyntax: the line is not valid JSON.
	ErrSyntax = errors.New("wire: invalid JSON")
	// ErrNotObject: the line is JSON but not an object.
	ErrNotObject = errors.New("wire: message is not a JSON object")
	// ErrNoType: the object has no "type", so it cannot be routed.
	ErrNoType = errors.New("wire: message has no type")
	// ErrField: a known message or block has a field of the wrong shape.
	ErrField = errors.New("wire: malformed field")
	// ErrEventTooLarge: an SSE event's data grew past the reader's cap.
	ErrEventTooLarge = errors.New("wire: event too large")
	// ErrNoSequence: a v2 event carries no usable sequence number.
	ErrNoSequence = errors.New("wire: event has no sequence number")
)

// LineError locates a decoding error in a stream. The stream itself is still
// usable: NDJSONReader.Next may be called again.
type LineError struct {
	Line int // 1-based, counting blank lines
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }
