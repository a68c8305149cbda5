package mcp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// capLines reads a stdio client's newline-delimited requests, each at
// most max bytes. A longer line is read to its end without being kept and
// answered with a JSON-RPC error, so an oversized request is an MCP error
// the client can act on, not the end of its session (the SDK's own cap
// closes the connection).
type capLines struct {
	r    *bufio.Reader
	c    io.Closer
	w    *lockedConn
	max  int
	line []byte // what is left of a line being passed on
	err  error  // the reader's error, once its lines are passed on
}

func (l *capLines) Read(p []byte) (int, error) {
	for len(l.line) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		l.line, l.err = l.next()
	}
	n := copy(p, l.line)
	l.line = l.line[n:]
	return n, nil
}

func (l *capLines) Close() error { return l.c.Close() }

// next returns the next line within the cap, newline included; an
// oversized one is answered and skipped.
func (l *capLines) next() ([]byte, error) {
	var line []byte
	over := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !over {
			if len(line)+len(chunk) > l.max+1 { // +1: the newline is not the request's
				over, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && !over:
			return line, err
		case err != nil:
			return nil, err
		}
		if !over {
			return line, nil
		}
		if werr := l.w.writeLine(oversized(l.max)); werr != nil {
			return nil, werr
		}
		over = false
	}
}

func oversized(max int) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request over the gateway's %d-byte cap: send less (a message text is at most %d bytes)"}}`+"\n", max, MaxText)
}

// lockedConn is the client's end, written by the SDK and by capLines.
type lockedConn struct {
	mu    sync.Mutex
	w     io.WriteCloser
	stall time.Duration // each write's deadline, when w has deadlines
}

func (c *lockedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.w.(interface{ SetWriteDeadline(time.Time) error }); ok && c.stall > 0 {
		_ = d.SetWriteDeadline(time.Now().Add(c.stall))
	}
	n, err := c.w.Write(p)
	if err != nil {
		// A line cut short leaves nothing to go on with: end the session.
		_ = c.w.Close()
	}
	return n, err
}

// writeLine writes b, newline included, in one write: the SDK's own
// messages are one write each, so none is split by another.
func (c *lockedConn) writeLine(b []byte) error {
	_, err := c.Write(b)
	return err
}

func (c *lockedConn) Close() error { return c.w.Close() }
