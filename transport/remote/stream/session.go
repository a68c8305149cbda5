package stream

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/transport/remote/wire"
)

// liveConn is one open connection of either transport.
type liveConn interface {
	// readLoop reads until the connection ends, handing each decoded frame
	// to emit (false: stop reading) and each undecodable one to bad, and
	// telling lv about every frame. It returns why reading ended.
	readLoop(ctx context.Context, lv *liveness, emit func(frame) bool, bad func(error)) error
	// send writes one line ending in "\n" (WebSocket only).
	send(ctx context.Context, line []byte) error
	// retryFloor is the least wait the server asked for before the next
	// attempt (the SSE retry: field), 0 if none.
	retryFloor() time.Duration
	close()
}

// frame is one message read from a connection.
type frame struct {
	msg     wire.Message
	seq     uint64 // SSE only
	eventID string // SSE only: the envelope's event_id
	// skip marks a sequenced keep-alive: it moves the sequence on but is
	// not delivered.
	skip bool
}

// liveness watches one connection: stall counts any byte, idle only
// messages that are not keep-alives.
type liveness struct {
	stall, idle *watchdog
	// initID is the request_id of our initialize: its answer alone does
	// not make a connection healthy, or a server that closes every
	// connection right after it would be retried for ever.
	initID string
	framed atomic.Bool // a frame other than that answer arrived
	frames *atomic.Uint64
}

// alive notes bytes from the server.
func (l *liveness) alive() { l.stall.kick() }

// received notes one whole frame: a line on the WebSocket, an event or
// comment on the event stream; m is nil for one that did not decode or
// carries no message.
func (l *liveness) received(m *wire.Message) {
	l.frames.Add(1)
	if m == nil || m.ControlResponse == nil || l.initID == "" || m.ControlResponse.RequestID != l.initID {
		l.framed.Store(true)
	}
	if m != nil && m.Kind != wire.KindKeepAlive {
		l.idle.kick()
	}
}

func (l *liveness) pause() { l.stall.pause(); l.idle.pause() }

func (l *liveness) resume() { l.stall.resume(); l.idle.resume() }

func (l *liveness) stop() { l.stall.stop(); l.idle.stop() }

// outcome is how one connection attempt ended.
type outcome struct {
	err        *ConnError // nil only when ctx ended or idle is set
	framed     bool       // a frame arrived, so the attempt did not fail
	idle       bool       // closed by IdleTimeout: go dormant
	retryFloor time.Duration
}

// connState is what processing needs to know about the open connection.
type connState struct {
	initID    string // request_id of our initialize; "" when not sent
	replaying bool   // replay=true and initialize not answered yet
}

// session runs one connection: open it, recover what was missed, deliver
// until it ends.
func (s *Stream) session(ctx context.Context, out Deliver, onLink func(Link)) outcome {
	hdr := http.Header{}
	if s.cfg.Header != nil {
		h, err := s.cfg.Header(ctx)
		if err != nil {
			return outcome{err: &ConnError{Cause: CauseCredentials, Err: err}}
		}
		if h != nil {
			hdr = h.Clone()
		}
	}
	replay := s.opened || s.cfg.ResumeAfterID != ""

	connCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(errDone)
	timer := s.clock.AfterFunc(s.cfg.OpenTimeout, func() { cancel(errOpenTimeout) })
	c, ce := s.open(connCtx, hdr, replay)
	if !timer.Stop() && ce == nil {
		c.close() // the timer fired as we opened
		ce = &ConnError{Cause: CauseOpenTimeout}
	}
	if ce != nil {
		if ctx.Err() == nil && context.Cause(connCtx) == errOpenTimeout {
			ce = &ConnError{Cause: CauseOpenTimeout, Err: fmt.Errorf("not open after %v", s.cfg.OpenTimeout)}
		}
		return outcome{err: ce}
	}

	s.count(func(st *Stats) {
		st.Connects++
		if s.opened {
			st.Reconnects++
		}
	})
	s.opened = true
	s.drainWake()
	ws := s.cfg.Transport == TransportWS
	st := &connState{}
	if ws && s.cfg.Initialize {
		st.initID, st.replaying = "init-"+strings.ToLower(rand.Text()), replay
	}
	lv := &liveness{
		stall:  newWatchdog(s.clock, s.cfg.StallTimeout, func() { cancel(errStalled) }),
		idle:   newWatchdog(s.clock, s.cfg.IdleTimeout, func() { cancel(errIdle) }),
		initID: st.initID,
		frames: &s.frames,
	}
	defer lv.stop()
	s.log.Debug("remote stream open", "replay", replay)
	onLink(Link{State: LinkConnected})

	bad := func(err error) {
		s.count(func(st *Stats) { st.Malformed++ })
		s.log.Warn("skipped a frame that does not decode", "err", err)
	}
	stopKeepAlive := func() {}
	if ws && s.cfg.KeepAlive > 0 {
		stopKeepAlive = s.keepAlive(connCtx, c, cancel)
	}

	// One goroutine reads, decodes and delivers: an idle stream holds one
	// stack, and a busy one hands nothing across goroutines. History is
	// read beside it on a goroutine of its own: the reader keeps taking the
	// server's pings meanwhile, and holds the first frame until what
	// History had is delivered.
	var (
		perr, readErr, recErr error
		recovering            sync.WaitGroup
		recovered             = make(chan struct{})
	)
	if st.initID != "" {
		if err := c.send(connCtx, wire.InitializeLine(st.initID)); err != nil {
			perr = &ConnError{Cause: CauseDropped, Err: fmt.Errorf("sending initialize: %w", err)}
		}
	}
	switch {
	case perr != nil:
	case s.cfg.History == nil:
		close(recovered)
	default:
		recovering.Go(func() {
			defer close(recovered)
			if ws {
				recErr = s.recoverWS(connCtx, ctx, out)
			} else {
				recErr = s.recoverSSE(connCtx, ctx, out, 0)
			}
			if recErr != nil {
				cancel(errDone)
			}
		})
	}
	if perr == nil {
		emit := func(f frame) bool {
			lv.pause() // waiting for History or the consumer, not the network
			defer lv.resume()
			select {
			case <-recovered:
			case <-connCtx.Done():
				return false
			}
			if recErr != nil {
				return false
			}
			if ws {
				perr = s.processWS(ctx, out, st, f.msg)
			} else {
				perr = s.processSSE(connCtx, ctx, out, f)
			}
			return perr == nil && connCtx.Err() == nil
		}
		readErr = c.readLoop(connCtx, lv, emit, bad)
	}
	recovering.Wait() // a connection that ended still gets what History had
	cause := context.Cause(connCtx)
	cancel(errDone)
	if recErr != nil {
		perr = recErr
	}
	stopKeepAlive()
	c.close()

	res := outcome{framed: lv.framed.Load(), retryFloor: c.retryFloor()}
	if ctx.Err() != nil {
		return res
	}
	res.err = endCause(readErr, cause, perr, ws)
	if res.err == nil {
		res.idle = true
	}
	return res
}

// endCause names why a connection ended; nil means it was closed for
// being idle. A close frame from the server wins over our own reasons,
// since it was there first. An event stream ends cleanly at EOF; a
// WebSocket only with a close frame.
func endCause(readErr, cause, perr error, ws bool) *ConnError {
	if code, reason, ok := closeStatus(readErr); ok {
		return &ConnError{Cause: CauseClosed, Code: code, Reason: reason, Err: readErr}
	}
	switch {
	case cause == errIdle:
		return nil
	case cause == errStalled:
		return &ConnError{Cause: CauseStalled}
	case perr != nil:
		var ce *ConnError
		if errors.As(perr, &ce) {
			return ce
		}
		return &ConnError{Cause: CauseDropped, Err: perr}
	case cause != nil && cause != errDone && !errors.Is(cause, context.Canceled):
		return &ConnError{Cause: CauseDropped, Err: cause}
	case !ws && errors.Is(readErr, io.EOF):
		return &ConnError{Cause: CauseClosed}
	}
	return &ConnError{Cause: CauseDropped, Err: readErr}
}

// open dials the configured transport.
func (s *Stream) open(ctx context.Context, hdr http.Header, replay bool) (liveConn, *ConnError) {
	if s.cfg.Transport == TransportSSE {
		return s.dialSSE(ctx, hdr)
	}
	return s.dialWS(ctx, hdr, replay)
}

// keepAlive sends {"type":"keep_alive"} every KeepAlive until ctx ends,
// from a timer rather than a goroutine of its own: ten thousand idle
// streams would otherwise hold ten thousand stacks for a write a minute. A
// failed write ends the connection. The returned stop waits for a write
// under way.
func (s *Stream) keepAlive(ctx context.Context, c liveConn, fail context.CancelCauseFunc) (stop func()) {
	var (
		mu      sync.Mutex
		t       clock.Stopper
		stopped bool
		wg      sync.WaitGroup // a timer armed or firing
		arm     func()
	)
	tick := func() {
		defer wg.Done()
		if err := c.send(ctx, wire.KeepAliveLine()); err != nil {
			fail(fmt.Errorf("sending keep_alive: %w", err))
			return
		}
		arm()
	}
	arm = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped || ctx.Err() != nil {
			return
		}
		wg.Add(1)
		t = s.clock.AfterFunc(s.cfg.KeepAlive, tick)
	}
	arm()
	return func() {
		mu.Lock()
		stopped = true
		if t != nil && t.Stop() {
			wg.Done()
		}
		mu.Unlock()
		wg.Wait()
	}
}
