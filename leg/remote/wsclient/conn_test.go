package wsclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
)

// hostile is a hand-rolled WebSocket server on loopback that sends what a
// test scripts, right or wrong, and records the frames the client sends.
type hostile struct {
	ln  net.Listener
	got chan ws.Frame // client frames, unmasked
}

// serve answers one client: the handshake (accept is the
// Sec-WebSocket-Accept it sends; "" sends the right one), then script
// with the raw connection.
func serve(t *testing.T, accept string, first []byte, script func(c net.Conn)) *hostile {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostile{ln: ln, got: make(chan ws.Frame, 16)}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if accept == "" {
			accept = acceptKey(req.Header.Get("Sec-WebSocket-Key"))
		}
		resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n\r\n"
		// The first frames go in the same write as the 101, so that the
		// HTTP client buffers them.
		if _, err := c.Write(append([]byte(resp), first...)); err != nil {
			return
		}
		recorded := make(chan struct{})
		go func() { // record what the client sends until it hangs up
			defer close(recorded)
			defer close(h.got)
			for {
				hd, err := ws.ReadHeader(br)
				if err != nil {
					return
				}
				p := make([]byte, hd.Length)
				if _, err := io.ReadFull(br, p); err != nil {
					return
				}
				if hd.Masked {
					ws.Cipher(p, hd.Mask, 0)
				}
				h.got <- ws.Frame{Header: hd, Payload: p}
			}
		}()
		if script != nil {
			script(c)
		}
		// Hold the connection until the client closes it or the test ends.
		<-recorded
	}()
	return h
}

func (h *hostile) url() string { return "ws://" + h.ln.Addr().String() + "/subscribe" }

// frame is one server frame as raw bytes.
func frame(fin bool, rsv byte, op ws.OpCode, masked bool, payload []byte) []byte {
	hd := ws.Header{Fin: fin, Rsv: rsv, OpCode: op, Masked: masked, Length: int64(len(payload))}
	p := bytes.Clone(payload)
	if masked {
		hd.Mask = [4]byte{1, 2, 3, 4}
		ws.Cipher(p, hd.Mask, 0)
	}
	var b bytes.Buffer
	_ = ws.WriteHeader(&b, hd)
	b.Write(p)
	return b.Bytes()
}

func text(s string) []byte { return frame(true, 0, ws.OpText, false, []byte(s)) }

func closeBody(code uint16, reason string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, code), reason...)
}

func dial(t *testing.T, h *hostile) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := Dial(ctx, &http.Client{}, h.url(), nil)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(c.CloseNow)
	return c
}

// readAll reads messages until reading ends, failing the test if that
// takes more than a few seconds (a client that waits for bytes it already
// has, or reads a payload it should have refused).
func readAll(t *testing.T, c *Conn) (msgs []string, err error) {
	t.Helper()
	timer := time.AfterFunc(5*time.Second, c.CloseNow)
	defer timer.Stop()
	for {
		if err := c.Wait(); err != nil {
			return msgs, err
		}
		m, err := c.Next()
		if err != nil {
			return msgs, err
		}
		if m != nil {
			msgs = append(msgs, string(m))
		}
	}
}

// closeSent is the close code the client sent, 0 if none.
func closeSent(h *hostile) int {
	for f := range h.got {
		if f.Header.OpCode == ws.OpClose && len(f.Payload) >= 2 {
			return int(binary.BigEndian.Uint16(f.Payload))
		}
	}
	return 0
}

func TestAClientRefusesWhatAServerMustNotSend(t *testing.T) {
	long := strings.Repeat("x", 126)
	tests := []struct {
		name  string
		first []byte
		limit int64
		want  []string // messages read before the failure
		code  int      // close code the client must send
		err   any      // a pointer to the error type expected
	}{
		{name: "a masked frame", first: frame(true, 0, ws.OpText, true, []byte("hi")), code: 1002, err: new(*ProtocolError)},
		{name: "a frame with a reserved bit set", first: frame(true, 4, ws.OpText, false, []byte("hi")), code: 1002, err: new(*ProtocolError)},
		{name: "an unknown opcode", first: frame(true, 0, 0x3, false, []byte("hi")), code: 1002, err: new(*ProtocolError)},
		{name: "a fragmented ping", first: frame(false, 0, ws.OpPing, false, []byte("p")), code: 1002, err: new(*ProtocolError)},
		{name: "a ping over 125 bytes", first: frame(true, 0, ws.OpPing, false, []byte(long)), code: 1002, err: new(*ProtocolError)},
		{name: "a continuation with no message begun", first: frame(true, 0, ws.OpContinuation, false, []byte("x")), code: 1002, err: new(*ProtocolError)},
		{name: "a new message inside a fragmented one", first: append(frame(false, 0, ws.OpText, false, []byte("a")), text("b")...), code: 1002, err: new(*ProtocolError)},
		{name: "a close with a code that may not be sent", first: frame(true, 0, ws.OpClose, false, closeBody(1005, "")), code: 1002, err: new(*ProtocolError)},
		{name: "a close reason that is not UTF-8", first: frame(true, 0, ws.OpClose, false, closeBody(1000, "\xff")), code: 1002, err: new(*ProtocolError)},
		{
			name: "a message over the limit, refused from its header alone",
			// Only the header is sent: reading the payload would wait for ever.
			first: frame(true, 0, ws.OpText, false, make([]byte, 1000))[:4], limit: 100, code: 1009, err: &ErrMessageTooBig,
		},
		{
			name:  "a message over the limit in fragments",
			first: append(frame(false, 0, ws.OpText, false, make([]byte, 60)), frame(true, 0, ws.OpContinuation, false, make([]byte, 60))...),
			limit: 100, code: 1009, err: &ErrMessageTooBig,
		},
		{name: "a text message that is not UTF-8", first: text("ok\xff"), code: 1007, err: &ErrInvalidUTF8},
		{
			name:  "a text message not UTF-8 across its fragments",
			first: append(text("fine"), append(frame(false, 0, ws.OpText, false, []byte("\xe2\x82")), frame(true, 0, ws.OpContinuation, false, []byte("\xac\xff"))...)...),
			want:  []string{"fine"}, code: 1007, err: &ErrInvalidUTF8,
		},
		{
			name:  "a character split across fragments and binary bytes are read",
			first: append(append(frame(false, 0, ws.OpText, false, []byte("\xe2\x82")), frame(true, 0, ws.OpContinuation, false, []byte("\xac"))...), append(frame(true, 0, ws.OpBinary, false, []byte("\xff")), frame(true, 0, ws.OpClose, false, closeBody(1000, ""))...)...),
			want:  []string{"€", "\xff"}, code: 1000, err: new(*CloseError),
		},
		{
			name:  "messages at the limit are read",
			first: append(text(strings.Repeat("y", 100)), frame(true, 0, ws.OpClose, false, closeBody(1000, ""))...),
			limit: 100, want: []string{strings.Repeat("y", 100)}, code: 1000, err: new(*CloseError),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := serve(t, "", tt.first, nil)
			c := dial(t, h)
			if tt.limit > 0 {
				c.SetReadLimit(tt.limit)
			}
			msgs, err := readAll(t, c)
			if strings.Join(msgs, "|") != strings.Join(tt.want, "|") {
				t.Errorf("read %q before the end, want %q", msgs, tt.want)
			}
			switch target := tt.err.(type) {
			case *error:
				if !errors.Is(err, *target) {
					t.Fatalf("err = %v, want %v", err, *target)
				}
			default:
				if !errors.As(err, target) {
					t.Fatalf("err = %v (%T), want a %T", err, err, target)
				}
			}
			if code := closeSent(h); code != tt.code {
				t.Fatalf("the client sent close code %d, want %d", code, tt.code)
			}
		})
	}
}

func TestAServerCloseIsReportedWithItsCodeAndReason(t *testing.T) {
	tests := []struct {
		name   string
		body   []byte
		code   int
		reason string
		echo   int
	}{
		{name: "a code and a reason", body: closeBody(4003, "forbidden"), code: 4003, reason: "forbidden", echo: 4003},
		{name: "no code at all", body: nil, code: 1005, echo: 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := serve(t, "", append(text("a"), frame(true, 0, ws.OpClose, false, tt.body)...), nil)
			msgs, err := readAll(t, dial(t, h))
			var ce *CloseError
			if !errors.As(err, &ce) || ce.Code != tt.code || ce.Reason != tt.reason {
				t.Fatalf("err = %v, want a close %d %q", err, tt.code, tt.reason)
			}
			if len(msgs) != 1 || msgs[0] != "a" {
				t.Fatalf("read %q before the close, want [a]", msgs)
			}
			if code := closeSent(h); code != tt.echo {
				t.Fatalf("the client answered with close %d, want %d", code, tt.echo)
			}
		})
	}
}

func TestAPingIsAnsweredAndAFragmentedMessageJoined(t *testing.T) {
	first := bytes.Join([][]byte{
		frame(false, 0, ws.OpText, false, []byte("hel")),
		frame(true, 0, ws.OpPing, false, []byte("are you there")),
		frame(true, 0, ws.OpPong, false, []byte("unasked")), // ignored
		frame(false, 0, ws.OpContinuation, false, []byte("lo ")),
		frame(true, 0, ws.OpContinuation, false, []byte("world")),
		frame(true, 0, ws.OpBinary, false, []byte("second")),
		frame(true, 0, ws.OpClose, false, closeBody(1000, "")),
	}, nil)
	h := serve(t, "", first, nil)
	c := dial(t, h)
	msgs, err := readAll(t, c)
	if strings.Join(msgs, "|") != "hello world|second" {
		t.Fatalf("read %q, want [hello world second]", msgs)
	}
	var ce *CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want the server's close", err)
	}
	f := <-h.got
	if f.Header.OpCode != ws.OpPong || string(f.Payload) != "are you there" || !f.Header.Masked {
		t.Fatalf("the client's first frame is %+v %q, want a masked pong with the ping's payload", f.Header, f.Payload)
	}
}

func TestTheClientMasksWhatItWrites(t *testing.T) {
	h := serve(t, "", nil, nil)
	c := dial(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, m := range []string{"{\"type\":\"keep_alive\"}\n", strings.Repeat("z", 70000)} {
		if err := c.WriteText(ctx, []byte(m)); err != nil {
			t.Fatal(err)
		}
		f := <-h.got
		if !f.Header.Masked || f.Header.OpCode != ws.OpText || !f.Header.Fin || string(f.Payload) != m {
			t.Fatalf("the server got %+v (%d bytes), want one masked text frame of %d bytes", f.Header, len(f.Payload), len(m))
		}
	}
}

func TestAnIdleConnectionWakesForLaterFramesAndHoldsNoBuffer(t *testing.T) {
	more := make(chan []byte)
	h := serve(t, "", text("first"), func(c net.Conn) {
		for b := range more {
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	})
	c := dial(t, h)
	for i, want := range []string{"first", "second", "third"} {
		if i > 0 {
			go func() { more <- text(want) }()
		}
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
		m, err := c.Next()
		if err != nil || string(m) != want {
			t.Fatalf("Next = %q, %v; want %q", m, err, want)
		}
	}
	// Nothing more has come: the next Wait gives the buffers back first.
	go func() {
		time.Sleep(50 * time.Millisecond)
		more <- frame(true, 0, ws.OpClose, false, closeBody(1001, "bye"))
		close(more)
	}()
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if c.br != nil || c.mb != nil {
		t.Fatal("a waiting connection still holds its buffers")
	}
	if c.src.raw == nil || !c.src.direct {
		t.Fatal("an idle plain connection does not wait on its socket")
	}
	if _, err := c.Next(); !errors.As(err, new(*CloseError)) {
		t.Fatalf("Next = %v, want the close", err)
	}
}

func TestFramesTheHTTPClientBufferedAreReadBeforeWaitingOnTheSocket(t *testing.T) {
	// The 101 and both messages arrive in one read of the HTTP client's
	// large buffer; the first is big enough to be read past our own
	// buffer, so that the second is left in the HTTP client's alone. A
	// wait on the socket then would wait for ever.
	big := strings.Repeat("b", 8000)
	h := serve(t, "", append(text(big), text("second")...), nil)
	hc := &http.Client{Transport: &http.Transport{ReadBufferSize: 64 << 10}}
	c, _, err := Dial(context.Background(), hc, h.url(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseNow)
	var hung atomic.Bool
	timer := time.AfterFunc(5*time.Second, func() { hung.Store(true); c.CloseNow() })
	defer timer.Stop()
	for _, want := range []string{big, "second"} {
		if err := c.Wait(); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		m, err := c.Next()
		if err != nil || string(m) != want || hung.Load() {
			t.Fatalf("Next = %d bytes, %v (hung: %v); want %d bytes", len(m), err, hung.Load(), len(want))
		}
	}
}

func TestAHandshakeThatIsNotAWebSocketIsRefused(t *testing.T) {
	t.Run("a wrong accept key", func(t *testing.T) {
		h := serve(t, "dGhlIHNhbXBsZSBub25jZQ==", nil, nil)
		c, resp, err := Dial(context.Background(), &http.Client{}, h.url(), nil)
		if c != nil {
			c.CloseNow()
		}
		var he *HandshakeError
		if !errors.As(err, &he) || resp == nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("Dial = %v, %v; want a handshake error with the 101", resp, err)
		}
	})
	t.Run("an HTTP error keeps what the server said", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"message":"nope"}}`, http.StatusForbidden)
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		_, resp, err := Dial(context.Background(), &http.Client{}, "ws://"+ln.Addr().String()+"/", nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("Dial = %v, %v; want the 403", resp, err)
		}
		if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), "nope") {
			t.Fatalf("body %q lost the server's message", b)
		}
	})
}

// fakeConn serves fixed bytes and swallows writes.
type fakeConn struct {
	io.Reader
	w bytes.Buffer
}

func (f *fakeConn) Write(p []byte) (int, error) { return f.w.Write(p) }
func (f *fakeConn) Close() error                { return nil }

// FuzzFrameReader reads arbitrary server bytes: it must end, never panic,
// and never return a message over the limit.
func FuzzFrameReader(f *testing.F) {
	f.Add(text("hello"), uint16(64))
	f.Add(append(frame(false, 0, ws.OpText, false, []byte("he")), frame(true, 0, ws.OpContinuation, false, []byte("llo"))...), uint16(64))
	f.Add(frame(true, 0, ws.OpPing, false, []byte("p")), uint16(8))
	f.Add(frame(true, 0, ws.OpClose, false, closeBody(4001, "auth")), uint16(8))
	f.Add(frame(true, 0, ws.OpText, true, []byte("masked")), uint16(64))
	f.Add([]byte{0x81, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 0}, uint16(64))
	f.Add([]byte{0x81, 0x7e, 0xff, 0xff}, uint16(100))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		c := newConn(&fakeConn{Reader: bytes.NewReader(data)}, nil)
		c.SetReadLimit(int64(limit))
		for range len(data) + 1 {
			if c.Wait() != nil {
				return
			}
			m, err := c.Next()
			if err != nil {
				return
			}
			if len(m) > int(limit) {
				t.Fatalf("a message of %d bytes passed a limit of %d", len(m), limit)
			}
		}
		t.Fatalf("reading %d bytes did not end", len(data))
	})
}
