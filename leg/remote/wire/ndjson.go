package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// NDJSONReader reads newline-delimited messages from a WebSocket message or
// any other stream. Decoding errors are per line (a *LineError) and the next
// call continues with the next line; read errors from the source end the
// stream and are returned as they are.
type NDJSONReader struct {
	br      *bufio.Reader
	max     int
	line    int
	buf     []byte
	readErr error
}

// NewNDJSONReader reads from r, refusing lines longer than maxLine bytes
// (MaxLine when maxLine <= 0).
func NewNDJSONReader(r io.Reader, maxLine int) *NDJSONReader {
	if maxLine <= 0 {
		maxLine = MaxLine
	}
	return &NDJSONReader{br: bufio.NewReaderSize(r, readBuf), max: maxLine}
}

// Next returns the next message, skipping blank lines. It returns io.EOF at
// the end; a last line without "\n" is still decoded.
func (r *NDJSONReader) Next() (Message, error) {
	for {
		if r.readErr != nil {
			return Message{}, r.readErr
		}
		line, tooLong := r.readLine()
		if len(line) == 0 && !tooLong && r.readErr != nil {
			return Message{}, r.readErr
		}
		r.line++
		if tooLong {
			return Message{}, &LineError{Line: r.line, Err: fmt.Errorf("%w: cap %d", ErrLineTooLong, r.max)}
		}
		line = trimJSONSpace(line)
		if len(line) == 0 {
			continue
		}
		m, err := decodeObject(line, "")
		if err != nil {
			return Message{}, &LineError{Line: r.line, Err: err}
		}
		return m, nil
	}
}

// Wait blocks until the next line has begun to arrive or reading failed;
// Next then returns it, or the failure. A reader left idle waits here, in
// a shallower stack than Next's.
func (r *NDJSONReader) Wait() {
	if r.readErr == nil && r.br.Buffered() == 0 {
		if _, err := r.br.Peek(1); err != nil {
			r.readErr = err
		}
	}
}

// readLine returns the next line without its "\n". A line over the cap is
// read to its end and discarded, so the stream stays in step.
func (r *NDJSONReader) readLine() (line []byte, tooLong bool) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !tooLong {
			r.buf = append(r.buf, chunk...)
			if n := len(bytes.TrimSuffix(r.buf, []byte("\n"))); n > r.max {
				tooLong, r.buf = true, r.buf[:0]
			}
		}
		switch {
		case err == nil:
			return r.taken(bytes.TrimSuffix(r.buf, []byte("\n"))), tooLong
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			r.readErr = err
			return r.taken(r.buf), tooLong
		}
	}
}

// taken returns a line read into r.buf. A long line's buffer is not kept
// for the next one: a stream idles for hours after one big tool result.
func (r *NDJSONReader) taken(b []byte) []byte {
	if cap(r.buf) > keepBuf {
		r.buf = nil
	}
	return b
}

// trimJSONSpace trims the whitespace JSON allows, and no other.
func trimJSONSpace(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }

// readBuf is the readers' buffer. Longer lines are gathered across reads,
// so it only bounds what an idle stream holds: with ten thousand streams
// open, 4 KiB each would be 40 MB. The stream beneath is buffered already.
const readBuf = 1 << 10

// keepBuf is the most a reader keeps of the room a long line or event
// needed once it is delivered.
const keepBuf = 64 << 10
