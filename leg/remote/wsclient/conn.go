package wsclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"github.com/gobwas/ws"
)

// CloseError is the close frame the server sent: its code (1005 when it
// gave none) and reason.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("websocket closed by the server: %d %q", e.Code, e.Reason)
}

// ProtocolError is a frame that breaks RFC 6455. The connection was failed
// with close code 1002.
type ProtocolError struct{ Err error }

func (e *ProtocolError) Error() string { return "websocket protocol error: " + e.Err.Error() }
func (e *ProtocolError) Unwrap() error { return e.Err }

// ErrMessageTooBig is a message over the read limit. The connection was
// failed with close code 1009 before the message was read.
var ErrMessageTooBig = errors.New("websocket: message over the read limit")

// ErrInvalidUTF8 is a text message that is not UTF-8 (RFC 6455 8.1). The
// connection was closed with 1007.
var ErrInvalidUTF8 = errors.New("websocket: text message is not valid UTF-8")

// DefaultReadLimit is a new Conn's read limit, in bytes a message.
const DefaultReadLimit = 32 << 10

// Conn is one client WebSocket. One goroutine reads (Wait, Next); writes
// may come from any goroutine and are serialized.
type Conn struct {
	rwc   io.ReadWriteCloser
	limit int64

	// Read side, owned by the reading goroutine.
	src  source
	br   *bufio.Reader // nil while waiting
	mb   *msgBuf       // the message being gathered; nil while waiting
	frag bool          // in a fragmented message
	text bool          // the message being read is text (its first frame's opcode)
	err  error         // why reading ended; every later read returns it
	hb   [ws.MaxHeaderSize]byte

	wmu     sync.Mutex
	wclosed bool // a close frame was written: nothing more may be
	closed  atomic.Bool
}

func newConn(rwc io.ReadWriteCloser, raw syscall.RawConn) *Conn {
	c := &Conn{rwc: rwc, limit: DefaultReadLimit, src: source{r: rwc, raw: raw}}
	if raw != nil {
		c.src.rawRead = c.src.readRaw
	}
	return c
}

// SetReadLimit sets the largest message Next accepts, its fragments
// together, in bytes.
func (c *Conn) SetReadLimit(n int64) { c.limit = n }

// source is what the read buffer reads: first the bytes Wait read while
// no buffer was held, then the connection.
type source struct {
	r      io.Reader // the upgraded response body
	pre    [16]byte
	off, n uint8

	// raw is the socket under r when it is a plain one (no TLS), else
	// nil; direct says r no longer serves bytes the HTTP client had
	// buffered, so that nothing sits between the socket and us and Wait
	// may wait on the socket itself, in a shallower stack than a read.
	raw     syscall.RawConn
	direct  bool
	rawRead func(fd uintptr) bool // readRaw, made once
	rawErr  error
}

func (s *source) Read(p []byte) (int, error) {
	if s.off < s.n {
		k := copy(p, s.pre[s.off:s.n])
		s.off += uint8(k)
		return k, nil
	}
	return s.readBody(p)
}

// readBody reads the response body. A read that returns less than asked
// for has emptied what the HTTP client buffered (a buffered reader serves
// all it holds, or reads the socket when it holds nothing).
func (s *source) readBody(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n < len(p) {
		s.direct = true
	}
	return n, err
}

// readRaw is the socket read of a wait on the socket: false asks to be
// called again once the socket is readable.
func (s *source) readRaw(fd uintptr) bool {
	n, err := readFD(fd, s.pre[:])
	if wouldBlock(err) {
		return false
	}
	s.off, s.n, s.rawErr = 0, uint8(max(n, 0)), err
	if n == 0 && err == nil {
		s.rawErr = io.EOF
	}
	return true
}

// msgBuf is a pooled message buffer.
type msgBuf struct{ b []byte }

// readBuf is the read buffer's size while bytes arrive; keepMsg the
// largest message buffer given back to the pool.
const (
	readBuf = 4 << 10
	keepMsg = 64 << 10
)

var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBuf) }}
	msgBufs = sync.Pool{New: func() any { return &msgBuf{b: make([]byte, 0, 1<<10)} }}
)

// Wait blocks until the server sends more, or reading failed. While it
// waits the connection holds no buffer: an idle connection costs little
// more than its socket, and the waiting goroutine's stack stays shallow.
func (c *Conn) Wait() error {
	if c.err != nil {
		return c.err
	}
	if !c.drained() {
		return nil
	}
	c.release()
	c.src.off, c.src.n = 0, 0
	if c.src.direct && c.src.raw != nil {
		err := c.src.raw.Read(c.src.rawRead)
		if err == nil {
			err = c.src.rawErr
		}
		if c.src.n == 0 && err != nil {
			return c.fail(err)
		}
		return nil
	}
	n, err := c.src.readBody(c.src.pre[:])
	c.src.off, c.src.n = 0, uint8(n)
	if n == 0 && err != nil {
		return c.fail(err)
	}
	return nil
}

// drained reports whether nothing read from the connection is left unread.
func (c *Conn) drained() bool {
	return (c.br == nil || c.br.Buffered() == 0) && c.src.off >= c.src.n
}

// release gives the buffers back while nothing is buffered in them.
func (c *Conn) release() {
	if c.br != nil {
		c.br.Reset(nil)
		readers.Put(c.br)
		c.br = nil
	}
	if c.mb != nil && !c.frag {
		if cap(c.mb.b) <= keepMsg {
			c.mb.b = c.mb.b[:0]
			msgBufs.Put(c.mb)
		}
		c.mb = nil
	}
}

// Next reads the next data message, its fragments joined, and returns it:
// valid until the next Next or Wait. It answers pings on the way. nil with
// no error means only control frames had arrived and nothing else is
// buffered: Wait again. A close frame from the server ends reading with a
// *CloseError after the close is answered.
func (c *Conn) Next() ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	if c.br == nil {
		c.br = readers.Get().(*bufio.Reader)
		c.br.Reset(&c.src)
	}
	if c.mb == nil {
		c.mb = msgBufs.Get().(*msgBuf)
	}
	if !c.frag {
		c.mb.b = c.mb.b[:0]
	}
	for {
		h, err := ws.ReadHeaderBuffer(c.br, c.hb[:])
		if errors.Is(err, ws.ErrHeaderLengthMSB) {
			return nil, c.failProtocol(err)
		}
		if err != nil {
			return nil, c.fail(err)
		}
		state := ws.StateClientSide
		if c.frag {
			state = state.Set(ws.StateFragmented)
		}
		if err := ws.CheckHeader(h, state); err != nil {
			return nil, c.failProtocol(err)
		}
		if h.OpCode.IsControl() {
			if err := c.control(h); err != nil {
				return nil, err
			}
			if !c.frag && c.drained() {
				return nil, nil
			}
			continue
		}
		if h.Length > c.limit-int64(len(c.mb.b)) {
			return nil, c.failClose(ws.StatusMessageTooBig, ErrMessageTooBig)
		}
		if err := c.payload(h.Length); err != nil {
			return nil, c.fail(err)
		}
		if !c.frag {
			c.text = h.OpCode == ws.OpText
		}
		c.frag = !h.Fin
		if h.Fin {
			if c.text && !utf8.Valid(c.mb.b) {
				return nil, c.failClose(ws.StatusInvalidFramePayloadData, ErrInvalidUTF8)
			}
			return c.mb.b, nil
		}
	}
}

// chunk bounds how much of a frame is read at once: room grows as bytes
// arrive, not on the length a header declares.
const chunk = 32 << 10

// payload appends n bytes of the frame to the message.
func (c *Conn) payload(n int64) error {
	for n > 0 {
		k := int(min(n, chunk))
		b := c.mb.b
		if cap(b)-len(b) < k {
			b = append(b[:cap(b)], make([]byte, k)...)[:len(b)]
		}
		got, err := io.ReadFull(c.br, b[len(b):len(b)+k])
		c.mb.b = b[:len(b)+got]
		if err != nil {
			return err
		}
		n -= int64(k)
	}
	return nil
}

// control handles a ping, pong or close frame (at most 125 bytes, checked).
func (c *Conn) control(h ws.Header) error {
	var buf [ws.MaxControlFramePayloadSize]byte
	p := buf[:h.Length]
	if _, err := io.ReadFull(c.br, p); err != nil {
		return c.fail(err)
	}
	switch h.OpCode {
	case ws.OpPing:
		if err := c.write(ws.OpPong, p); err != nil {
			return c.fail(err)
		}
	case ws.OpClose:
		code, reason := ws.StatusNoStatusRcvd, ""
		if len(p) > 0 {
			code, reason = ws.ParseCloseFrameData(p)
			if err := ws.CheckCloseFrameData(code, reason); err != nil || len(p) == 1 {
				if err == nil {
					err = errors.New("a close payload of one byte")
				}
				return c.failProtocol(err)
			}
		}
		echo := code
		if len(p) == 0 {
			echo = ws.StatusNormalClosure
		}
		return c.failClose(echo, &CloseError{Code: int(code), Reason: reason})
	}
	return nil
}

// WriteText sends p as one text message. When ctx ends first the
// connection is closed.
func (c *Conn) WriteText(ctx context.Context, p []byte) error {
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, c.CloseNow)
		defer stop()
	}
	err := c.write(ws.OpText, p)
	if err != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// write sends one frame, masked as a client must.
func (c *Conn) write(op ws.OpCode, p []byte) error {
	h := ws.Header{Fin: true, OpCode: op, Masked: true, Length: int64(len(p))}
	_, _ = rand.Read(h.Mask[:]) // never fails
	hs := ws.HeaderSize(h)
	out := bytes.NewBuffer(make([]byte, 0, hs+len(p)))
	if err := ws.WriteHeader(out, h); err != nil {
		return err
	}
	out.Write(p)
	ws.Cipher(out.Bytes()[hs:], h.Mask, 0)

	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wclosed || c.closed.Load() {
		return errClosed
	}
	if op == ws.OpClose {
		c.wclosed = true
	}
	_, err := c.rwc.Write(out.Bytes())
	return err
}

// fail ends reading with err and closes the connection.
func (c *Conn) fail(err error) error {
	if c.err == nil {
		c.err = err
	}
	c.release()
	c.CloseNow()
	return c.err
}

// failProtocol sends a 1002 close and ends reading.
func (c *Conn) failProtocol(err error) error {
	return c.failClose(ws.StatusProtocolError, &ProtocolError{Err: err})
}

// failClose sends a close with code (best effort: the server may not be
// reading) and ends reading with err.
func (c *Conn) failClose(code ws.StatusCode, err error) error {
	_ = c.write(ws.OpClose, ws.NewCloseFrameBody(code, ""))
	return c.fail(err)
}

// CloseNow closes the connection without a close handshake. Safe to call
// more than once and from any goroutine.
func (c *Conn) CloseNow() {
	if c.closed.CompareAndSwap(false, true) {
		_ = c.rwc.Close()
	}
}
