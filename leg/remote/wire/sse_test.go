package wire

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func readAll(r *SSEReader) ([]Event, error) {
	var out []Event
	for {
		ev, err := r.Next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		comments bool
		want     []Event
		lastID   string
	}{
		{"one event with id and type", "id: 7\nevent: client_event\ndata: {}\n\n", false,
			[]Event{{ID: "7", Type: "client_event", Data: "{}"}}, "7"},
		{"multi-line data is joined with newlines and the type defaults to message", "data: a\ndata:b\ndata\n\n", false,
			[]Event{{Type: "message", Data: "a\nb\n"}}, ""},
		{"CR, LF and CRLF all end lines", "data: a\r\rdata: b\n\ndata: c\r\n\r\n", false,
			[]Event{{Type: "message", Data: "a"}, {Type: "message", Data: "b"}, {Type: "message", Data: "c"}}, ""},
		{"a leading BOM is dropped once", "\uFEFFdata: x\n\n", false, []Event{{Type: "message", Data: "x"}}, ""},
		{"a BOM later in the stream is data", "data: x\n\n\uFEFFdata: y\n\n", false, []Event{{Type: "message", Data: "x"}}, ""},
		{"comments are skipped by default", ": ping\n\ndata: x\n\n", false, []Event{{Type: "message", Data: "x"}}, ""},
		{"comments are yielded when asked, as keep-alives", ": ping\ndata: x\n\n", true,
			[]Event{{Comment: true, Data: "ping"}, {Type: "message", Data: "x"}}, ""},
		{"the id persists to later events", "id: 1\ndata: a\n\ndata: b\n\n", false,
			[]Event{{ID: "1", Type: "message", Data: "a"}, {ID: "1", Type: "message", Data: "b"}}, "1"},
		{"an empty id resets the last event id", "id: 1\ndata: a\n\nid\ndata: b\n\n", false,
			[]Event{{ID: "1", Type: "message", Data: "a"}, {Type: "message", Data: "b"}}, ""},
		{"an id with a NUL is ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", false,
			[]Event{{ID: "1", Type: "message", Data: "a"}, {ID: "1", Type: "message", Data: "b"}}, "1"},
		{"a block without data is not dispatched but its id counts", "id: 4\nevent: ping\n\n", false, nil, "4"},
		{"retry sets the delay; a non-numeric retry is ignored", "retry: 1500\ndata: a\n\nretry: 1.5\ndata: b\n\n", false,
			[]Event{{Type: "message", Data: "a", Retry: 1500 * time.Millisecond}, {Type: "message", Data: "b"}}, ""},
		{"unknown fields are ignored", "foo: bar\ndata: a\n\n", false, []Event{{Type: "message", Data: "a"}}, ""},
		{"an unfinished event at the end is discarded", "data: a\n\nid: 9\ndata: b\n", false, []Event{{Type: "message", Data: "a"}}, ""},
		{"only one space after the colon is stripped", "data:  a\n\n", false, []Event{{Type: "message", Data: " a"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewSSEReader(iotest.OneByteReader(strings.NewReader(tt.in)), SSEOptions{Comments: tt.comments})
			got, err := readAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			if r.LastEventID() != tt.lastID {
				t.Errorf("LastEventID %q, want %q", r.LastEventID(), tt.lastID)
			}
		})
	}
	t.Run("the latest retry is remembered", func(t *testing.T) {
		r := NewSSEReader(strings.NewReader("retry: 3000\n\n"), SSEOptions{})
		if _, err := readAll(r); err != nil || r.Retry() != 3*time.Second {
			t.Errorf("Retry %v, err %v", r.Retry(), err)
		}
	})
}

func TestSSEReaderRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"a line over the cap", "data: " + strings.Repeat("x", 100) + "\n\n", ErrLineTooLong},
		{"a line over the cap with no newline at all", strings.Repeat("x", 1000), ErrLineTooLong},
		{"an event whose data lines add up past the cap", strings.Repeat("data: "+strings.Repeat("x", 40)+"\n", 4) + "\n", ErrEventTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewSSEReader(strings.NewReader(tt.in), SSEOptions{MaxLine: 64})
			_, err := readAll(r)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if _, again := r.Next(); !errors.Is(again, tt.want) {
				t.Errorf("the error is not final: %v", again)
			}
		})
	}
}

func TestDecodeV2(t *testing.T) {
	tests := []struct {
		name  string
		ev    Event
		check func(t *testing.T, e V2Event)
	}{
		{"an envelope with a string sequence number and a typed payload",
			Event{Data: `{"event_id":"e1","event_type":"assistant","sequence_num":"42","source":"worker","created_at":"t","payload":` + seedAssistant + `}`},
			func(t *testing.T, e V2Event) {
				if e.SequenceNum != 42 || e.EventID != "e1" || e.Source != "worker" || e.Message.Kind != KindAssistant || e.Message.Assistant.ID != "msg_1" {
					t.Errorf("got %+v", e)
				}
			}},
		{"a payload without type takes the event type",
			Event{Data: `{"event_type":"system","sequence_num":3,"payload":{"subtype":"init"}}`},
			func(t *testing.T, e V2Event) {
				if e.SequenceNum != 3 || e.Message.Kind != KindSystem || e.Message.System.Subtype != "init" {
					t.Errorf("got %+v", e)
				}
			}},
		{"a bare message with sequence_num beside its type",
			Event{Data: `{"type":"control_cancel_request","request_id":"abc","sequence_num":9}`},
			func(t *testing.T, e V2Event) {
				if e.SequenceNum != 9 || e.EventType != "control_cancel_request" || e.Message.Cancel.RequestID != "abc" {
					t.Errorf("got %+v", e)
				}
			}},
		{"without sequence_num the decimal SSE id is the sequence",
			Event{ID: "17", Data: seedKeepAlive},
			func(t *testing.T, e V2Event) {
				if e.SequenceNum != 17 || e.Message.Kind != KindKeepAlive {
					t.Errorf("got %+v", e)
				}
			}},
		{"an unknown event type is kept raw",
			Event{Data: `{"event_type":"autocompact_state","sequence_num":"5","payload":{"state":"on"}}`},
			func(t *testing.T, e V2Event) {
				if e.Message.Kind != KindUnknown || e.Message.Type != "autocompact_state" || string(e.Message.Raw) != `{"state":"on"}` {
					t.Errorf("got %+v", e)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := DecodeV2(tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, e)
		})
	}

	rejects := []struct {
		name string
		ev   Event
		want error
	}{
		{"no sequence anywhere", Event{ID: "abc", Data: seedKeepAlive}, ErrNoSequence},
		{"a negative sequence", Event{Data: `{"type":"keep_alive","sequence_num":-1}`}, ErrField},
		{"a fractional sequence", Event{Data: `{"type":"keep_alive","sequence_num":1.5}`}, ErrField},
		{"a sequence of the wrong type", Event{Data: `{"type":"keep_alive","sequence_num":true}`}, ErrField},
		{"data that is not JSON", Event{Data: `{`}, ErrSyntax},
		{"data that is not an object", Event{Data: `7`}, ErrNotObject},
		{"a payload with no type and no event type", Event{Data: `{"sequence_num":1,"payload":{}}`}, ErrNoType},
	}
	for _, tt := range rejects {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			if _, err := DecodeV2(tt.ev); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}

	t.Run("pings and comments are keep-alives, data events are not", func(t *testing.T) {
		if !(Event{Type: "ping"}).IsKeepAlive() || !(Event{Comment: true}).IsKeepAlive() || (Event{Type: "message"}).IsKeepAlive() {
			t.Error("IsKeepAlive misclassifies")
		}
	})
}

// chunkReader returns the input in pieces ending at the given offsets.
type chunkReader struct {
	data []byte
	cuts []int
	pos  int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.pos >= len(c.data) {
		return 0, io.EOF
	}
	end := len(c.data)
	for len(c.cuts) > 0 {
		cut := c.cuts[0]
		c.cuts = c.cuts[1:]
		if cut > c.pos && cut < end {
			end = cut
			break
		}
	}
	n := copy(p, c.data[c.pos:end])
	c.pos += n
	return n, nil
}

func FuzzSSE(f *testing.F) {
	f.Add([]byte("id: 7\nevent: client_event\ndata: {}\n\n"), []byte{3, 9})
	f.Add([]byte("\uFEFFdata: a\r\ndata: b\r\n\r\n: ping\r\rretry: 10\ndata\n\n"), []byte{1, 2, 15})
	f.Add([]byte("data: x\r\n\r\nid: 1\x00\ndata: y\n\n"), []byte{7, 8})
	f.Fuzz(func(t *testing.T, in []byte, cutBytes []byte) {
		end := strings.IndexAny(string(in), "\r\n")
		if end < 0 {
			end = len(in)
		}
		if got := lineEnd(in); got != end {
			t.Fatalf("lineEnd(%q) = %d, want %d", in, got, end)
		}
		opt := SSEOptions{MaxLine: 256, Comments: true}
		whole := NewSSEReader(strings.NewReader(string(in)), opt)
		want, wantErr := readAll(whole)

		var cuts []int
		acc := 0
		for _, b := range cutBytes {
			acc += int(b)
			cuts = append(cuts, acc)
		}
		split := NewSSEReader(&chunkReader{data: in, cuts: cuts}, opt)
		got, gotErr := readAll(split)
		if !reflect.DeepEqual(got, want) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("split at %v changed the events:\n%+v %v\n%+v %v", cuts, got, gotErr, want, wantErr)
		}
		if whole.LastEventID() != split.LastEventID() {
			t.Fatalf("last id differs: %q vs %q", whole.LastEventID(), split.LastEventID())
		}
		for _, ev := range want {
			_, _ = DecodeV2(ev) // must not panic
		}
	})
}
