package stream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/leg/remote/wsclient"
)

// wsURL is the subscribe URL (docs/protocols/claude-ai-remote.md#two-transports):
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
	c, resp, err := wsclient.Dial(ctx, s.http, s.wsURL(replay), hdr)
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			body, _ := io.ReadAll(resp.Body) // Dial keeps the first KiB
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
	// ctx is the connection's: its end closes the connection, which ends
	// a read or write under way. One watch for the whole connection, set
	// here rather than in readLoop, whose frame an idle stream waits in.
	return &wsConn{c: c, stop: context.AfterFunc(ctx, c.CloseNow)}, nil
}

type wsConn struct {
	c    *wsclient.Conn
	stop func() bool // stops the watch of the connection's context
	line int         // lines read, blank ones included
}

func (w *wsConn) readLoop(ctx context.Context, lv *liveness, emit func(frame) bool, bad func(error)) error {
	for {
		// Wait in this small frame, holding no buffer: an idle stream's
		// stack is most of what it costs, and its depth while waiting sets
		// its size.
		if err := w.c.Wait(); err != nil {
			return readErr(ctx, err)
		}
		lv.alive() // pings count too
		if done, err := w.step(ctx, lv, emit, bad); done {
			return err
		}
	}
}

// readErr is why reading ended: ctx's cause once ctx ended (which closed
// the connection), else err.
func readErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// step reads one message and decodes and hands on each of its lines; done
// says reading ended, with err why.
//
//go:noinline
func (w *wsConn) step(ctx context.Context, lv *liveness, emit func(frame) bool, bad func(error)) (done bool, err error) {
	msg, err := w.c.Next()
	if err != nil {
		return true, readErr(ctx, err)
	}
	ended := false
	w.lines(msg, func(m wire.Message, err error) bool {
		if err != nil {
			lv.received(nil)
			bad(err)
			return true
		}
		lv.received(&m)
		if m.Kind == wire.KindKeepAlive {
			return true // liveness only
		}
		ended = !emit(frame{msg: m})
		return !ended
	})
	if ended {
		return true, context.Cause(ctx)
	}
	return false, nil
}

// lines decodes the lines of one message in turn, handing f each one's
// message or *wire.LineError; blank lines are skipped, and false from f
// stops. A line never spans two messages: the server sends whole lines.
func (w *wsConn) lines(msg []byte, f func(wire.Message, error) bool) {
	for len(msg) > 0 {
		var line []byte
		line, msg, _ = bytes.Cut(msg, []byte("\n"))
		w.line++
		if len(trimSpace(line)) == 0 {
			continue
		}
		m, err := wire.Decode(line)
		if err != nil {
			err = &wire.LineError{Line: w.line, Err: err}
		}
		if !f(m, err) {
			return
		}
	}
}

// trimSpace trims the whitespace JSON allows.
func trimSpace(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }

func (w *wsConn) send(ctx context.Context, line []byte) error {
	return w.c.WriteText(ctx, line)
}

func (w *wsConn) retryFloor() time.Duration { return 0 }

// close drops the connection without a close handshake: the reader has
// stopped, and nothing would read the server's answering close frame.
func (w *wsConn) close() {
	w.stop()
	w.c.CloseNow()
}

// closeStatus returns the close code and reason of a WebSocket closed by
// the server.
func closeStatus(err error) (int, string, bool) {
	var ce *wsclient.CloseError
	if errors.As(err, &ce) {
		return ce.Code, ce.Reason, true
	}
	return 0, "", false
}
