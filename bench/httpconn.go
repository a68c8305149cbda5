package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// apiConn is one keep-alive HTTP/1.1 connection to the control socket,
// spoken directly: a request written, its response read, in the caller's
// goroutine. net/http's client hands each request to two goroutines of its
// own, which on a busy two-core machine costs as much as the socket write
// being measured; what is measured here is the gateway, so the client is
// kept as thin as curl's.
type apiConn struct {
	sock string
	c    net.Conn
	r    *bufio.Reader
	buf  bytes.Buffer
}

func (a *apiConn) close() {
	if a.c != nil {
		a.c.Close()
		a.c = nil
	}
}

// do sends one request with a JSON body (nil for none) and returns the
// status and body of the answer. A connection that fails is closed, and
// the next request dials afresh.
func (a *apiConn) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	if a.c == nil {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", a.sock)
		if err != nil {
			return 0, nil, err
		}
		a.c, a.r = c, bufio.NewReaderSize(c, 16<<10)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = a.c.SetDeadline(dl)
	} else {
		_ = a.c.SetDeadline(time.Now().Add(30 * time.Second))
	}
	a.buf.Reset()
	fmt.Fprintf(&a.buf, "%s %s HTTP/1.1\r\nHost: gateway\r\n", method, path)
	if body != nil {
		a.buf.WriteString("Content-Type: application/json\r\nContent-Length: ")
		a.buf.WriteString(strconv.Itoa(len(body)))
		a.buf.WriteString("\r\n")
	}
	a.buf.WriteString("\r\n")
	a.buf.Write(body)
	if _, err := a.c.Write(a.buf.Bytes()); err != nil {
		a.close()
		return 0, nil, err
	}
	resp, err := http.ReadResponse(a.r, nil)
	if err != nil {
		a.close()
		return 0, nil, err
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil || resp.Close {
		a.close()
	}
	return resp.StatusCode, raw, err
}

// apiPool holds idle keep-alive connections to one control socket, at
// most maxSenders of them.
type apiPool struct {
	sock string
	idle chan *apiConn
}

func newAPIPool(sock string) *apiPool {
	return &apiPool{sock: sock, idle: make(chan *apiConn, maxSenders)}
}

// do is apiConn.do on an idle connection, or a new one.
func (p *apiPool) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var c *apiConn
	select {
	case c = <-p.idle:
	default:
		c = &apiConn{sock: p.sock}
	}
	st, raw, err := c.do(ctx, method, path, body)
	p.idle <- c
	return st, raw, err
}

// close closes the idle connections.
func (p *apiPool) close() {
	for len(p.idle) > 0 {
		(<-p.idle).close()
	}
}
