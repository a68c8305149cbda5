package stream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sessiongateway/gateway/leg/remote/wire"
)

// sseURL is the v2 event stream, resuming after the last sequence number
// delivered.
func (s *Stream) sseURL() string {
	u, _ := url.Parse(s.cfg.BaseURL) // validated by New
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/code/sessions/" + url.PathEscape(s.cfg.SessionID) + "/events/stream"
	u.RawPath = ""
	u.RawQuery = ""
	if s.lastSeq > 0 {
		u.RawQuery = url.Values{"from_sequence_num": {strconv.FormatUint(s.lastSeq, 10)}}.Encode()
	}
	return u.String()
}

func (s *Stream) dialSSE(ctx context.Context, hdr http.Header) (liveConn, *ConnError) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.sseURL(), nil)
	if err != nil {
		return nil, &ConnError{Cause: CauseDial, Err: err}
	}
	req.Header = hdr
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	if s.lastSeq > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(s.lastSeq, 10))
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, &ConnError{Cause: CauseDial, Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		resp.Body.Close()
		return nil, statusError(resp, body, s.clock.Now())
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return nil, &ConnError{Cause: CauseProtocol, Err: errors.New("content type " + strconv.Quote(resp.Header.Get("Content-Type")))}
	}
	return &sseConn{body: resp.Body}, nil
}

type sseConn struct {
	body  io.ReadCloser
	retry atomic.Int64 // the server's retry: in nanoseconds
}

func (c *sseConn) readLoop(ctx context.Context, lv *liveness, emit func(frame) bool, bad func(error)) error {
	rd := wire.NewSSEReader(liveReader{c.body, lv}, wire.SSEOptions{Comments: true})
	for {
		ev, err := rd.Next()
		c.retry.Store(int64(rd.Retry()))
		if err != nil {
			return err
		}
		if ev.IsKeepAlive() {
			lv.received(nil)
			continue
		}
		v, err := wire.DecodeV2(ev)
		if err != nil {
			lv.received(nil)
			bad(err) // the sequence jump it leaves is filled from History
			continue
		}
		lv.received(&v.Message)
		f := frame{msg: v.Message, seq: v.SequenceNum, eventID: v.EventID, skip: v.Message.Kind == wire.KindKeepAlive}
		if !emit(f) {
			return context.Cause(ctx)
		}
	}
}

func (c *sseConn) send(context.Context, []byte) error {
	return errors.New("stream: the event stream is receive-only")
}

func (c *sseConn) retryFloor() time.Duration { return time.Duration(c.retry.Load()) }

func (c *sseConn) close() { c.body.Close() }

// liveReader tells lv about every byte the server sends: ": ping" comments
// are liveness too.
type liveReader struct {
	r  io.Reader
	lv *liveness
}

func (l liveReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.lv.alive()
	}
	return n, err
}

// statusError describes an HTTP error answer to a dial, with the server's
// own message when it sent the Anthropic error shape.
func statusError(resp *http.Response, body []byte, now time.Time) *ConnError {
	ce := &ConnError{Cause: CauseStatus, Status: resp.StatusCode, Reason: errorMessage(body)}
	ce.RetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	return ce
}

// maxReason bounds the server's text kept in a ConnError: enough to say
// what went wrong, not a page of HTML.
const maxReason = 200

// errorMessage reads {"type":"error","error":{"type":..,"message":..}}, or
// falls back to the body's first line.
func errorMessage(body []byte) string {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	var msg string
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
		if e.Error.Type != "" {
			msg = e.Error.Type + ": " + msg
		}
	} else {
		msg, _, _ = strings.Cut(strings.TrimSpace(string(body)), "\n")
	}
	if len(msg) > maxReason {
		msg = msg[:maxReason]
	}
	return strings.ToValidUTF8(msg, "?")
}
