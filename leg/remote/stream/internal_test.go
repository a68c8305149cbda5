package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/leg/remote/wsclient"
	"github.com/sessiongateway/gateway/testkit/clock"
)

func TestTheDedupWindowForgetsTheLeastRecentlySeen(t *testing.T) {
	w := newWindow(3)
	for _, k := range []string{"a", "b", "c"} {
		w.add(k)
	}
	w.has("a") // a is now the most recent; b the least
	w.add("d")
	tests := []struct {
		name string
		key  string
		want bool
	}{
		{"a key seen again stays", "a", true},
		{"the least recently seen key is forgotten", "b", false},
		{"a newer key stays", "c", true},
		{"the newest key stays", "d", true},
		{"a request id is kept apart from a uuid of the same text", requestKey("a"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := w.has(tt.key); got != tt.want {
				t.Fatalf("has(%q) = %v, want %v", tt.key, got, tt.want)
			}
		})
	}
	if w.ll.Len() != 3 || len(w.m) != 3 {
		t.Fatalf("window holds %d/%d keys, want 3", w.ll.Len(), len(w.m))
	}
}

func TestTheWatchdog(t *testing.T) {
	const d = 10 * time.Second
	tests := []struct {
		name  string
		steps func(c *clock.FakeClock, w *watchdog)
		fired bool
	}{
		{"it fires once d passed without a kick", func(c *clock.FakeClock, w *watchdog) { c.Advance(d) }, true},
		{"it does not fire before d", func(c *clock.FakeClock, w *watchdog) { c.Advance(d - 1) }, false},
		{"a kick starts the count again", func(c *clock.FakeClock, w *watchdog) {
			c.Advance(d - 1)
			w.kick()
			c.Advance(d - 1)
		}, false},
		{"it fires d after the last kick", func(c *clock.FakeClock, w *watchdog) {
			c.Advance(d - 1)
			w.kick()
			c.Advance(d)
		}, true},
		{"paused time does not count", func(c *clock.FakeClock, w *watchdog) {
			w.pause()
			c.Advance(3 * d)
			w.resume()
			c.Advance(d - 1)
		}, false},
		{"the count runs again after resume", func(c *clock.FakeClock, w *watchdog) {
			w.pause()
			c.Advance(3 * d)
			w.resume()
			c.Advance(d)
		}, true},
		{"a stopped watchdog never fires", func(c *clock.FakeClock, w *watchdog) {
			w.stop()
			c.Advance(3 * d)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clock.NewFakeClock(time.Time{})
			fired := 0
			w := newWatchdog(c, d, func() { fired++ })
			tt.steps(c, w)
			c.Advance(0)
			if (fired == 1) != tt.fired || fired > 1 {
				t.Fatalf("fired %d times, want fired=%v (once at most)", fired, tt.fired)
			}
			w.stop()
			if c.Pending() != 0 {
				t.Fatalf("%d timers left after stop", c.Pending())
			}
		})
	}
	t.Run("a watchdog with no timeout does nothing and never panics", func(t *testing.T) {
		w := newWatchdog(clock.NewFakeClock(time.Time{}), 0, func() { t.Fatal("fired") })
		w.kick()
		w.pause()
		w.resume()
		w.stop()
	})
}

func TestDefaultBackoffDoublesWithJitter(t *testing.T) {
	s := time.Second
	tests := []struct {
		name  string
		steps func(r *reconnect) // before the wait measured
		base  time.Duration
	}{
		{"a stream's first failure waits about two seconds", func(*reconnect) {}, 2 * s},
		{"after a healthy connection it waits about a second", func(r *reconnect) { r.healthy() }, s},
		{"a failure after that about two", func(r *reconnect) { r.healthy(); r.next() }, 2 * s},
		{"the fourth failure in a row about sixteen", func(r *reconnect) { r.next(); r.next(); r.next() }, 16 * s},
		{"a wake from dormancy starts again at two", func(r *reconnect) { r.next(); r.next(); r.fresh() }, 2 * s},
		{"the wait stops growing at 2^8 s", func(r *reconnect) {
			for range 40 {
				r.next()
			}
		}, 256 * s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 100 {
				r := newReconnect(DefaultBackoff, nil)
				tt.steps(r)
				if got := r.next(); got < tt.base || got >= tt.base+s {
					t.Fatalf("wait %v, want in [%v, %v)", got, tt.base, tt.base+s)
				}
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 11, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   string
		want time.Duration
	}{
		{"an absent header means no floor", "", 0},
		{"delay-seconds are seconds", "5", 5 * time.Second},
		{"surrounding space is ignored", " 7 ", 7 * time.Second},
		{"zero is no wait", "0", 0},
		{"a negative number is invalid", "-1", 0},
		{"a fraction is invalid", "1.5", 0},
		{"garbage is invalid", "soon", 0},
		{"an HTTP date counts from now", now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second},
		{"a date in the past is no wait", now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"a huge delay is capped at an hour", "99999999999999999999", time.Hour},
		{"a far date is capped at an hour", now.Add(48 * time.Hour).Format(http.TimeFormat), time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseRetryAfter(tt.in, now); got != tt.want {
				t.Fatalf("ParseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "120", "Wed, 11 Mar 2026 12:00:30 GMT", "-5", "1e3", "18446744073709551616"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 11, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if d := ParseRetryAfter(s, now); d < 0 || d > time.Hour {
			t.Fatalf("ParseRetryAfter(%q) = %v, outside [0, 1h]", s, d)
		}
	})
}

func TestEndCauseNamesWhyAConnectionEnded(t *testing.T) {
	closed := func(code int) error {
		return fmt.Errorf("reading: %w", &wsclient.CloseError{Code: code, Reason: "bye"})
	}
	recovery := &ConnError{Cause: CauseRecovery, Err: errors.New("500")}
	tests := []struct {
		name      string
		readErr   error
		cause     error
		perr      error
		ws        bool
		want      Cause
		code      int
		permanent bool
	}{
		{"a close frame with 4003 is permanent", closed(4003), nil, nil, true, CauseClosed, 4003, true},
		{"a close frame with 4001 is permanent", closed(4001), nil, nil, true, CauseClosed, 4001, true},
		{"a close frame with 1002 is permanent", closed(1002), nil, nil, true, CauseClosed, 1002, true},
		{"a close frame with 1008 is retried", closed(1008), nil, nil, true, CauseClosed, 1008, false},
		{"a close frame wins over a stall noticed at the same time", closed(1011), errStalled, nil, true, CauseClosed, 1011, false},
		{"EOF on a WebSocket is a lost connection", io.EOF, nil, nil, true, CauseDropped, 0, false},
		{"EOF on an event stream is a clean end", io.EOF, nil, nil, false, CauseClosed, 0, false},
		{"a cut-off event stream is a lost connection", io.ErrUnexpectedEOF, nil, nil, false, CauseDropped, 0, false},
		{"a stall is a stall", context.Canceled, errStalled, nil, true, CauseStalled, 0, false},
		{"a failed recovery is reported as such", context.Canceled, errDone, recovery, false, CauseRecovery, 0, false},
		{"a failed keep-alive write is a lost connection", context.Canceled, errors.New("sending keep_alive: broken pipe"), nil, true, CauseDropped, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ce := endCause(tt.readErr, tt.cause, tt.perr, tt.ws)
			if ce == nil || ce.Cause != tt.want || ce.Code != tt.code || ce.permanent() != tt.permanent {
				t.Fatalf("endCause = %+v, want cause %v code %d permanent %v", ce, tt.want, tt.code, tt.permanent)
			}
		})
	}
	t.Run("the idle cut-off is no failure at all", func(t *testing.T) {
		if ce := endCause(context.Canceled, errIdle, nil, true); ce != nil {
			t.Fatalf("endCause = %v, want nil", ce)
		}
	})
}

// linesOf is what the stream must see in msgs: each message's lines, a
// last one without "\n" ended by the message, blank ones skipped.
func linesOf(msgs []string) [][]byte {
	var out [][]byte
	for _, m := range msgs {
		for _, l := range strings.Split(m, "\n") {
			if b := bytes.Trim([]byte(l), " \t\r\n"); len(b) > 0 { // the whitespace JSON allows
				out = append(out, b)
			}
		}
	}
	return out
}

func readAllMessages(t *testing.T, msgs []string) (ok [][]byte, bad int) {
	t.Helper()
	w := &wsConn{}
	for _, msg := range msgs {
		w.lines([]byte(msg), func(m wire.Message, err error) bool {
			var le *wire.LineError
			switch {
			case errors.As(err, &le):
				bad++
			case err != nil:
				t.Fatalf("lines: %v", err)
			default:
				ok = append(ok, m.Raw)
			}
			return true
		})
	}
	return ok, bad
}

func TestALineNeverSpansTwoWebSocketMessages(t *testing.T) {
	tests := []struct {
		name string
		msgs []string
		ok   int
		bad  int
	}{
		{"one line a message", []string{`{"type":"a"}` + "\n", `{"type":"b"}` + "\n"}, 2, 0},
		{"a message without its newline still ends its line", []string{`{"type":"a"}`, `{"type":"b"}`}, 2, 0},
		{"several lines in one message", []string{`{"type":"a"}` + "\n" + `{"type":"b"}` + "\r\n\n" + `{"type":"c"}`}, 3, 0},
		{"a line cut in two by a message boundary is two bad lines", []string{`{"type":`, `"a"}`}, 0, 2},
		{"empty messages are nothing", []string{"", "\n", `{"type":"a"}`}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, bad := readAllMessages(t, tt.msgs)
			if len(ok) != tt.ok || bad != tt.bad {
				t.Fatalf("%d decoded, %d bad; want %d, %d", len(ok), bad, tt.ok, tt.bad)
			}
		})
	}
}

// FuzzWebSocketFraming cuts a byte stream into WebSocket messages and checks
// the stream decodes exactly the lines each message holds, no matter where
// the cuts fall.
func FuzzWebSocketFraming(f *testing.F) {
	f.Add(`{"type":"keep_alive"}`+"\n"+`{"type":"assistant","uuid":"u","message":{"content":"hi"}}`, []byte{5, 30})
	f.Add(`{"type":"a"}`+"\r\n\n"+`{"type":"b"}`, []byte{})
	f.Add("\n\n\n", []byte{1, 1, 1})
	f.Add(`{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool"}}`, []byte{200})
	f.Fuzz(func(t *testing.T, data string, cuts []byte) {
		var msgs []string
		rest := data
		for _, c := range cuts {
			n := int(c)
			if n > len(rest) {
				break
			}
			msgs = append(msgs, rest[:n])
			rest = rest[n:]
		}
		msgs = append(msgs, rest)
		ok, bad := readAllMessages(t, msgs)
		want := linesOf(msgs)
		if len(ok)+bad != len(want) {
			t.Fatalf("%d lines read (%d bad), want %d from %q", len(ok)+bad, bad, len(want), msgs)
		}
		i := 0
		for _, w := range want {
			if _, err := wire.Decode(w); err != nil {
				continue
			}
			if i >= len(ok) || !bytes.Equal(ok[i], w) {
				t.Fatalf("line %q was not decoded in its place", w)
			}
			i++
		}
		if i != len(ok) {
			t.Fatalf("decoded %d lines that do not decode on their own", len(ok)-i)
		}
	})
}

func FuzzErrorMessage(f *testing.F) {
	f.Add([]byte(`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`))
	f.Add([]byte("<html>\n<body>Bad gateway</body>"))
	f.Add([]byte{0xff, 0xfe, '\n'})
	f.Fuzz(func(t *testing.T, body []byte) {
		s := errorMessage(body)
		if !utf8.ValidString(s) || len(s) > 3*maxReason {
			t.Fatalf("errorMessage(%q) = %q: invalid or too long", body, s)
		}
	})
}
