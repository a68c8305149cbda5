package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sessiongateway/gateway/message"
)

// streamReader answers every request with 200 and an event stream read
// from r.
type streamReader struct{ r io.Reader }

func (s streamReader) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(s.r)}, nil
}

// watchAll runs Watch over stream and returns the events it handed on.
func watchAll(stream io.Reader) ([]message.Event, error) {
	c := &Client{base: "http://gateway", http: &http.Client{Transport: streamReader{stream}}}
	var got []message.Event
	err := c.Watch(context.Background(), -1, func(ev message.Event) error {
		got = append(got, ev)
		return nil
	})
	return got, err
}

// dataLines is an endless stream of one event's data lines, never ended
// by the blank line that would hand it on.
type dataLines struct {
	line []byte
	off  int // into line
}

func (d *dataLines) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], d.line[d.off:])
		n, d.off = n+c, (d.off+c)%len(d.line)
	}
	return n, nil
}

func TestWatchRefusesAnEventPastItsCap(t *testing.T) {
	tests := []struct {
		name   string
		stream io.Reader
	}{
		{"data lines that do not end one event", io.LimitReader(&dataLines{line: []byte("data: " + strings.Repeat("x", 1<<20) + "\n")}, 3*(8<<20))},
		{"one data line past the cap", io.MultiReader(strings.NewReader("data: "), &dataLines{line: []byte("x")})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := watchAll(tt.stream)
			if err == nil || errors.Is(err, ErrStreamEnded) || len(got) != 0 {
				t.Fatalf("Watch = %d events, %v; want an error", len(got), err)
			}
		})
	}
}

// FuzzWatch: whatever the stream holds, Watch never panics and ends with
// an error; and the events the gateway writes (writeEvent), whatever text
// they carry and whatever stream came before a blank line, arrive as they
// were written, in order.
func FuzzWatch(f *testing.F) {
	var b bytes.Buffer
	_ = writeEvent(&b, message.Event{ID: 4, Type: message.EventIdle, Idle: &message.IdleNotice{}})
	f.Add(b.Bytes(), "hi")
	f.Add([]byte("event: gap\ndata: {\"type\":\"gap\"}\n\n"), "")
	f.Add([]byte("event: error\ndata: {\"error\":\"gone\"}\n\n"), "x\ny")
	f.Add([]byte("data: {\"id\":1,\n\ndata: \"type\":\"message\"}\n\n: comment\n\n"), "<b>\u2028")
	f.Add([]byte("data: {}\r\n\r\n"), "\x1b[2J")
	f.Fuzz(func(t *testing.T, stream []byte, text string) {
		if _, err := watchAll(bytes.NewReader(stream)); err == nil {
			t.Fatalf("Watch of %q ended without an error", stream)
		}
		if !utf8.ValidString(text) {
			return
		}
		want := []message.Event{
			{ID: 1, Type: message.EventMessage, Message: &message.Message{ID: "m-1", Body: text}},
			{ID: 2, Type: message.EventIdle, Idle: &message.IdleNotice{Peer: text}},
		}
		var in bytes.Buffer
		if i := bytes.LastIndex(stream, []byte("\n\n")); i >= 0 && !bytes.Contains(stream[:i], []byte("event: error\n")) {
			in.Write(stream[:i+2]) // what came before: whole events, none an error
		}
		skip := len(mustEvents(t, in.Bytes()))
		for _, ev := range want {
			if err := writeEvent(&in, ev); err != nil {
				t.Fatal(err)
			}
		}
		got, err := watchAll(&in)
		if !errors.Is(err, ErrStreamEnded) || len(got) != skip+len(want) {
			t.Fatalf("Watch of %q: %d events, %v; want %d then the end", in.Bytes(), len(got), err, skip+len(want))
		}
		got = got[skip:]
		if got[0].ID != 1 || got[0].Message == nil || got[0].Message.Body != text || got[1].ID != 2 || got[1].Idle == nil || got[1].Idle.Peer != text {
			t.Fatalf("Watch read %+v from %q", got, in.Bytes())
		}
	})
}

// mustEvents is what Watch hands on from b, a stream of whole events that
// may fail as one (a malformed event): then the test is of no use.
func mustEvents(t *testing.T, b []byte) []message.Event {
	got, err := watchAll(bytes.NewReader(b))
	if !errors.Is(err, ErrStreamEnded) {
		t.Skip("the stream before is not one Watch reads to its end")
	}
	return got
}
