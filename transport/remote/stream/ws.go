package stream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/sessiongateway/gateway/transport/remote/wire"
)

// wsURL is the subscribe URL of seed 001:
// ws(s)://host/v1/sessions/ws/{id}/subscribe?organization_uuid=ORG[&replay=true].
func (s *Stream) wsURL(replay bool) string {
	u, _ := url.Parse(s.cfg.BaseURL) // validated by New
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/sessions/ws/" + url.PathEscape(s.cfg.SessionID) + "/subscribe"
	u.RawPath = ""
	q := url.Values{"organization_uuid": {s.cfg.OrgUUID}}
	if replay {
		q.Set("replay", "true")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *Stream) dialWS(ctx context.Context, hdr http.Header, replay bool) (liveConn, *ConnError) {
	c, resp, err := websocket.Dial(ctx, s.wsURL(replay), &websocket.DialOptions{HTTPClient: s.http, HTTPHeader: hdr})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			var body []byte
			if resp.Body != nil { // Dial keeps the first KiB
				body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<10))
			}
			return nil, statusError(resp, body, s.clock.Now())
		}
		if resp != nil {
			return nil, &ConnError{Cause: CauseProtocol, Err: err}
		}
		return nil, &ConnError{Cause: CauseDial, Err: err}
	}
	// Room for one line of MaxLine and its newline; the server sends a line
	// per message.
	c.SetReadLimit(wire.MaxLine + 1)
	return &wsConn{c: c}, nil
}

type wsConn struct{ c *websocket.Conn }

func (w *wsConn) readLoop(ctx context.Context, lv *liveness, emit func(frame) bool, bad func(error)) error {
	// One watch of ctx for the whole connection: given a ctx that can end,
	// each Reader call would arm and disarm a watch of its own, several
	// allocations per message.
	stop := context.AfterFunc(ctx, func() { _ = w.c.CloseNow() })
	defer stop()
	next := func() (io.Reader, error) {
		_, r, err := w.c.Reader(context.Background())
		if err == nil {
			lv.alive()
		} else if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return r, err
	}
	rd := wire.NewNDJSONReader(&wsSource{next: next}, wire.MaxLine)
	for {
		// Wait in this small frame: an idle stream's stack is most of
		// what it costs, and its depth while waiting sets its size.
		rd.Wait()
		if done, err := w.step(ctx, rd, lv, emit, bad); done {
			return err
		}
	}
}

// step reads, decodes and hands on one line; done says reading ended,
// with err why.
//
//go:noinline
func (w *wsConn) step(ctx context.Context, rd *wire.NDJSONReader, lv *liveness, emit func(frame) bool, bad func(error)) (done bool, err error) {
	m, err := rd.Next()
	if err != nil {
		var le *wire.LineError
		if errors.As(err, &le) {
			lv.received(nil)
			bad(err)
			return false, nil
		}
		return true, err
	}
	lv.received(&m)
	if m.Kind == wire.KindKeepAlive {
		return false, nil // liveness only
	}
	if !emit(frame{msg: m}) {
		return true, context.Cause(ctx)
	}
	return false, nil
}

func (w *wsConn) send(ctx context.Context, line []byte) error {
	return w.c.Write(ctx, websocket.MessageText, line)
}

func (w *wsConn) retryFloor() time.Duration { return 0 }

// close drops the connection without a close handshake: the reader has
// stopped, and nothing would read the server's answering close frame.
func (w *wsConn) close() { w.c.CloseNow() }

// wsSource reads WebSocket messages back to back as one byte stream for an
// NDJSONReader, so one reader and its buffer serve the whole connection. A
// message may hold several lines; one that does not end in "\n" is given
// one, so a line never spans two messages.
type wsSource struct {
	next func() (io.Reader, error) // the next message
	r    io.Reader                 // the message being read; nil between messages
	last byte                      // last byte of the message so far
	nl   bool                      // owe a "\n" before the next message
}

func (w *wsSource) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if w.r == nil {
			if w.nl {
				w.nl = false
				p[0] = '\n'
				return 1, nil
			}
			r, err := w.next()
			if err != nil {
				return 0, err
			}
			w.r, w.last = r, '\n'
		}
		n, err := w.r.Read(p)
		if n > 0 {
			w.last = p[n-1]
		}
		if errors.Is(err, io.EOF) {
			w.r, w.nl = nil, w.last != '\n'
			err = nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
}

// closeStatus returns the close code and reason of a WebSocket closed by
// the server.
func closeStatus(err error) (int, string, bool) {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return int(ce.Code), ce.Reason, true
	}
	return 0, "", false
}
