package uds

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Cred is the peer's identity as the kernel saw it at connect time.
type Cred struct{ PID, UID, GID int }

// readBufSize is the read buffer per connection. Lines longer than it are
// assembled in a separate slice, so MaxLine costs memory only when used.
const readBufSize = 4 << 10

// longAgo is a deadline in the past: it fails pending and later I/O at once.
var longAgo = time.Unix(1, 0)

// Conn is one accepted connection. Cred comes from SO_PEERCRED at accept.
// ReadLine is not safe for concurrent use; writes go straight to the socket
// and carry no deadline unless the handler sets one.
type Conn struct {
	*net.UnixConn
	Cred Cred

	ctx   context.Context // the Serve ctx: done means shutdown
	lim   Limits
	stats *counters
	br    *bufio.Reader

	firstDeadline time.Time // the first line must be complete by then
	lastDeadline  time.Time // MaxConnAge after the accept: no read goes past it
	first         bool      // the first line is still to come
	markDeadline  time.Time // with RearmOnMark: the deadline Mark last set
	err           error     // sticky: once set, ReadLine returns it forever

	mu   sync.Mutex // orders our deadline updates against shutdown's
	shut bool
}

func newConn(ctx context.Context, uc *net.UnixConn, cred Cred, lim Limits, stats *counters) *Conn {
	now := time.Now()
	return &Conn{
		UnixConn:      uc,
		Cred:          cred,
		ctx:           ctx,
		lim:           lim,
		stats:         stats,
		br:            bufio.NewReaderSize(uc, readBufSize),
		firstDeadline: now.Add(lim.FirstLineTimeout),
		lastDeadline:  now.Add(lim.MaxConnAge),
		first:         true,
	}
}

// Mark says the line just read counted (with Limits.Rearm RearmOnMark: an
// accepted auth line, a frame that parsed): the read deadline moves to
// LineTimeout from now. Without RearmOnMark it does nothing.
func (c *Conn) Mark() {
	if c.lim.Rearm == RearmOnMark {
		c.markDeadline = time.Now().Add(c.lim.LineTimeout)
	}
}

// shutdown fails pending and later I/O so a handler blocked on the socket
// returns; ReadLine then reports the cancelled ctx.
func (c *Conn) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shut = true
	_ = c.UnixConn.SetDeadline(longAgo)
}

func (c *Conn) isShut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shut
}

// arm sets the read deadline for the next line, unless we are shutting down.
func (c *Conn) arm() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shut {
		return c.ctx.Err()
	}
	d := c.firstDeadline
	switch {
	case c.lim.Rearm == RearmOnMark:
		if !c.markDeadline.IsZero() {
			d = c.markDeadline
		}
	case !c.first:
		d = time.Now().Add(c.lim.LineTimeout)
	}
	if d.After(c.lastDeadline) {
		d = c.lastDeadline
	}
	return c.UnixConn.SetReadDeadline(d)
}

// ReadLine returns the next line without its '\n'. A final line without '\n'
// is returned as a line; the clean end after it is io.EOF. A line longer than
// MaxLine (ErrLineTooLong) or not completed in time (ErrTimeout), and any
// read once MaxConnAge has passed since the accept (ErrTimeout), closes the
// connection. At shutdown it returns the cancelled ctx's error. After any
// error, every later call returns the same error.
func (c *Conn) ReadLine() ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	if err := c.arm(); err != nil {
		c.err = err
		return nil, err
	}
	line, err := c.readLine()
	if err != nil {
		c.err = c.classify(err)
		return nil, c.err
	}
	c.first = false
	return line, nil
}

// readLine assembles one line, checking the cap after each read so that an
// over-long line is refused as soon as it is over, not when its '\n' arrives.
func (c *Conn) readLine() ([]byte, error) {
	var line []byte
	units := 0
	for {
		if c.br.Buffered() == 0 {
			// Peek(1) blocks for at most one read from the socket.
			if _, err := c.br.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && len(line) > 0 {
					return line, nil // a final line without '\n'
				}
				return nil, err
			}
		}
		chunk, _ := c.br.Peek(c.br.Buffered())
		i := bytes.IndexByte(chunk, '\n')
		n := len(chunk)
		if i >= 0 {
			n = i
		}
		if c.lim.Units == UnitUTF16 {
			units += utf16Units(chunk[:n])
			if units > c.lim.MaxLine || len(line)+n > 3*c.lim.MaxLine {
				return nil, ErrLineTooLong
			}
		} else if len(line)+n > c.lim.MaxLine {
			return nil, ErrLineTooLong
		}
		line = append(line, chunk[:n]...)
		if i >= 0 {
			_, _ = c.br.Discard(i + 1)
			if line == nil {
				line = []byte{}
			}
			return line, nil
		}
		_, _ = c.br.Discard(n)
	}
}

// utf16Units counts the UTF-16 code units of UTF-8 text, byte by byte so a
// character split across reads is counted once: one for each byte that
// starts a sequence, one more for a 4-byte one (a surrogate pair).
func utf16Units(b []byte) int {
	n := 0
	for _, x := range b {
		if x&0xC0 != 0x80 {
			n++
		}
		if x >= 0xF0 {
			n++
		}
	}
	return n
}

// classify turns a read failure into ReadLine's error, counting and closing
// for the caps.
func (c *Conn) classify(err error) error {
	switch {
	case errors.Is(err, ErrLineTooLong):
		c.stats.tooLong.Add(1)
		_ = c.UnixConn.Close()
		unit := "bytes"
		if c.lim.Units == UnitUTF16 {
			unit = "UTF-16 code units"
		}
		return fmt.Errorf("uds: read line: %w (max %d %s)", ErrLineTooLong, c.lim.MaxLine, unit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		if c.isShut() {
			return c.ctx.Err()
		}
		c.stats.timeouts.Add(1)
		_ = c.UnixConn.Close()
		return &opError{op: "read line from", path: c.peerName(), kind: ErrTimeout, cause: err}
	case errors.Is(err, io.EOF):
		return io.EOF
	}
	if c.isShut() {
		return c.ctx.Err()
	}
	return fmt.Errorf("uds: read line: %w", err)
}

func (c *Conn) peerName() string { return fmt.Sprintf("pid %d", c.Cred.PID) }
