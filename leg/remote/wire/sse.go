package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Event is one dispatched server-sent event, or a comment when Comment is set.
type Event struct {
	// ID is the last event ID at dispatch: the stream's last "id:" value,
	// which persists across events as the WHATWG rules say. Send it back as
	// Last-Event-ID when reconnecting.
	ID   string
	Type string // "message" when the event named none
	Data string // data lines joined with "\n"
	// Retry is the reconnection delay a "retry:" field set in this event's
	// block, 0 when none did. SSEReader.Retry keeps the latest.
	Retry time.Duration
	// Comment marks a ":" line, yielded only with SSEOptions.Comments. The
	// server sends them as keep-alives; Data holds the text after the colon.
	Comment bool
}

// SSEOptions tunes an SSEReader. The zero value is usable.
type SSEOptions struct {
	// MaxLine caps one line and, separately, one event's data, in bytes;
	// MaxLine (the package constant) when <= 0.
	MaxLine int
	// Comments yields comment lines as events, so an idle timer can count
	// them as liveness.
	Comments bool
}

// SSEReader reads a text/event-stream by the WHATWG rules: a leading BOM is
// dropped; lines end in CRLF, LF or CR; fields are id, event, data and retry,
// others are ignored; a blank line dispatches; an event with no data is not
// dispatched; an unfinished event at end of stream is discarded. Errors (a
// line or event over the cap, a read error) are final: the stream is out of
// step and the caller reconnects with LastEventID.
type SSEReader struct {
	br      *bufio.Reader
	opt     SSEOptions
	line    []byte
	started bool // BOM check done
	skipLF  bool // the last line ended in CR; an LF next is part of it
	err     error

	idBuf   string // the id field as read; becomes lastID at the blank line
	lastID  string
	evType  string
	data    []byte
	hasData bool
	retry   time.Duration // set in the current block
	latest  time.Duration
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader, opt SSEOptions) *SSEReader {
	if opt.MaxLine <= 0 {
		opt.MaxLine = MaxLine
	}
	return &SSEReader{br: bufio.NewReaderSize(r, sseReadBuf), opt: opt}
}

// LastEventID is the value to send as Last-Event-ID on reconnect. An id in a
// block cut off before its blank line does not count: that event was lost.
func (r *SSEReader) LastEventID() string { return r.lastID }

// Retry is the latest reconnection delay the server asked for, 0 if none.
func (r *SSEReader) Retry() time.Duration { return r.latest }

// Next returns the next event. It returns io.EOF at a clean end of stream.
func (r *SSEReader) Next() (Event, error) {
	for {
		if r.err != nil {
			return Event{}, r.err
		}
		line, err := r.readLine()
		if err != nil {
			r.err = err
			return Event{}, err
		}
		if len(line) == 0 {
			if ev, ok := r.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			if r.opt.Comments {
				return Event{Comment: true, Data: strings.TrimPrefix(string(line[1:]), " ")}, nil
			}
			continue
		}
		if err := r.field(line); err != nil {
			r.err = err
			return Event{}, err
		}
	}
}

// field processes one "name: value" line.
func (r *SSEReader) field(line []byte) error {
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		value = bytes.TrimPrefix(value, []byte(" "))
	}
	switch string(name) {
	case "event":
		r.evType = string(value)
	case "data":
		if len(r.data)+len(value)+1 > r.opt.MaxLine {
			return fmt.Errorf("%w: cap %d", ErrEventTooLarge, r.opt.MaxLine)
		}
		r.data = append(r.data, value...)
		r.data = append(r.data, '\n')
		r.hasData = true
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.idBuf = string(value)
		}
	case "retry":
		if ms, ok := digits(value); ok {
			r.retry = time.Duration(ms) * time.Millisecond
			r.latest = r.retry
		}
	}
	return nil
}

// digits parses a retry value: ASCII digits only, else ignored. Values too
// large for a Duration are ignored too.
func digits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0, false
	}
	return n, true
}

// dispatch ends the current block.
func (r *SSEReader) dispatch() (Event, bool) {
	r.lastID = r.idBuf
	ev := Event{ID: r.lastID, Type: r.evType, Retry: r.retry}
	ok := r.hasData
	if ok {
		ev.Data = string(r.data[:len(r.data)-1])
		if ev.Type == "" {
			ev.Type = "message"
		}
	}
	r.evType, r.data, r.hasData, r.retry = "", r.data[:0], false, 0
	if cap(r.data) > keepBuf {
		r.data = nil
	}
	return ev, ok
}

// readLine returns the next line without its terminator. A partial line at
// end of stream is discarded with the unfinished event, per the rules.
func (r *SSEReader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	if cap(r.line) > keepBuf { // the last line was a long one
		r.line = nil
	}
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				if errors.Is(err, io.EOF) {
					return nil, io.EOF
				}
				return nil, err
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		if r.skipLF {
			r.skipLF = false
			if buf[0] == '\n' {
				_, _ = r.br.Discard(1)
				continue
			}
		}
		i := lineEnd(buf)
		if len(r.line)+i > r.opt.MaxLine {
			return nil, fmt.Errorf("%w: cap %d", ErrLineTooLong, r.opt.MaxLine)
		}
		r.line = append(r.line, buf[:i]...)
		if i == len(buf) {
			_, _ = r.br.Discard(i)
			continue
		}
		r.skipLF = buf[i] == '\r'
		_, _ = r.br.Discard(i + 1)
		if !r.started {
			r.started = true
			r.line = bytes.TrimPrefix(r.line, []byte("\uFEFF"))
		}
		return r.line, nil
	}
}

// lineEnd is where the first CR or LF in buf is, len(buf) if none: two
// single-byte searches, much faster than one for either byte.
func lineEnd(buf []byte) int {
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		i = len(buf)
	}
	if j := bytes.IndexByte(buf[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

// sseReadBuf is the event stream reader's buffer: an event is most of a
// KiB, and each read of a response body is a chunked-decoding call, so it
// holds a few; the NDJSON reader's readBuf stays small for idle WebSockets.
const sseReadBuf = 4 << 10
