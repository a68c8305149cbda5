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
	"github.com/sessiongateway/gateway/leg/remote/wire"
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

// minHealthy is how long a connection that only ever had keep-alives
// must have been kept up by them to count as healthy: a server that closes
// idle streams on a schedule must not make an idle session give up, and
// one reconnect a minute is no flood.
const minHealthy = time.Minute

// liveness watches one connection: stall counts any byte, idle only
// messages that are not keep-alives.
type liveness struct {
	stall, idle *watchdog
	// initID is the request_id of our initialize: its answer alone does
	// not make a connection healthy, or a server that closes every
	// connection right after it would be retried for ever.
	initID string
	// framed: a message arrived (not a keep-alive, a ping, a frame that
	// does not decode, nor the answer to our initialize). Without one, a
	// connection is healthy only when keep-alives kept it up for
	// minHealthy: a server that sends a ping and closes is a failure.
	framed atomic.Bool
	clock  clock.Clock
	opened time.Time
	kept   atomic.Int64 // time from opened to the last keep-alive, while not framed
	frames *atomic.Uint64
}

// alive notes bytes from the server.
func (l *liveness) alive() { l.stall.kick() }

// received notes one whole frame: a line on the WebSocket, an event or
// comment on the event stream; m is nil for one that did not decode or
// carries no message.
func (l *liveness) received(m *wire.Message) {
	l.frames.Add(1)
	switch {
	case m == nil || m.Kind == wire.KindKeepAlive:
		if !l.framed.Load() {
			l.kept.Store(int64(l.clock.Now().Sub(l.opened)))
		}
		return
	case m.ControlResponse == nil || l.initID == "" || m.ControlResponse.RequestID != l.initID:
		l.framed.Store(true)
	}
	l.idle.kick()
}

// healthy says the connection did not fail: see framed.
func (l *liveness) healthy() bool {
	return l.framed.Load() || time.Duration(l.kept.Load()) >= minHealthy
}

func (l *liveness) pause() { l.stall.pause(); l.idle.pause() }

func (l *liveness) resume() { l.stall.resume(); l.idle.resume() }

func (l *liveness) stop() { l.stall.stop(); l.idle.stop() }

// outcome is how one connection attempt ended.
type outcome struct {
	err        *ConnError // nil only when ctx ended or idle is set
	healthy    bool       // a message arrived (see liveness), so the attempt did not fail
	idle       bool       // closed by IdleTimeout: go dormant
	retryFloor time.Duration
}

// connState is what processing needs to know about the open connection.
type connState struct {
	initID    string // request_id of our initialize; "" when not sent
	replaying bool   // replay=true and initialize not answered yet
}

// attempt is one open connection and what its reading needs.
type attempt struct {
	s             *Stream
	ctx           context.Context // Run's
	out           Deliver
	connCtx       context.Context // the connection's; ends it
	cancel        context.CancelCauseFunc
	c             liveConn
	st            *connState
	lv            *liveness
	ws            bool
	stopKeepAlive func()

	perr, readErr, recErr error
	recovering            sync.WaitGroup
	recovered             chan struct{} // closed once History is delivered
}

// connect opens a connection; nil and why when it could not.
//
//go:noinline
func (s *Stream) connect(ctx context.Context, out Deliver, onLink func(Link)) (*attempt, outcome) {
	hdr := http.Header{}
	if s.cfg.Header != nil {
		h, err := s.cfg.Header(ctx)
		if err != nil {
			return nil, outcome{err: &ConnError{Cause: CauseCredentials, Err: err}}
		}
		if h != nil {
			hdr = h.Clone()
		}
	}
	replay := s.opened || s.cfg.ResumeAfterID != ""

	connCtx, cancel := context.WithCancelCause(ctx)
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
		cancel(errDone)
		return nil, outcome{err: ce}
	}

	s.count(func(st *Stats) {
		st.Connects++
		if s.opened {
			st.Reconnects++
		}
	})
	s.opened = true
	s.drainWake()
	a := &attempt{s: s, ctx: ctx, out: out, connCtx: connCtx, cancel: cancel, c: c,
		st: &connState{}, ws: s.cfg.Transport == TransportWS, stopKeepAlive: func() {}, recovered: make(chan struct{})}
	if a.ws && s.cfg.Initialize {
		a.st.initID, a.st.replaying = "init-"+strings.ToLower(rand.Text()), replay
	}
	a.lv = &liveness{
		stall:  newWatchdog(s.clock, s.cfg.StallTimeout, func() { cancel(errStalled) }),
		idle:   newWatchdog(s.clock, s.cfg.IdleTimeout, func() { cancel(errIdle) }),
		initID: a.st.initID,
		clock:  s.clock,
		opened: s.clock.Now(),
		frames: &s.frames,
	}
	s.logger().Debug("remote stream open", "replay", replay)
	onLink(Link{State: LinkConnected})
	return a, outcome{}
}

// stop releases the connection's context and watchdogs.
func (a *attempt) stop() {
	a.cancel(errDone)
	a.lv.stop()
}

// start sends the keep-alives and our initialize, and reads History;
// false when the connection failed already (a.perr says why).
//
// One goroutine reads, decodes and delivers: an idle stream holds one
// stack, and a busy one hands nothing across goroutines. History is read
// beside it on a goroutine of its own: the reader keeps taking the
// server's pings meanwhile, and holds the first frame until what History
// had is delivered.
//
//go:noinline
func (a *attempt) start() bool {
	s := a.s
	if a.ws && s.cfg.KeepAlive > 0 {
		a.stopKeepAlive = s.keepAlive(a.connCtx, a.c, a.cancel)
	}
	if a.st.initID != "" {
		if err := a.c.send(a.connCtx, wire.InitializeLine(a.st.initID)); err != nil {
			a.perr = &ConnError{Cause: CauseDropped, Err: fmt.Errorf("sending initialize: %w", err)}
			return false
		}
	}
	if s.cfg.History == nil {
		close(a.recovered)
		return true
	}
	a.recovering.Go(func() {
		defer close(a.recovered)
		if a.ws {
			a.recErr = s.recoverWS(a.connCtx, a.ctx, a.out)
		} else {
			a.recErr = s.recoverSSE(a.connCtx, a.ctx, a.out, 0)
		}
		if a.recErr != nil {
			a.cancel(errDone)
		}
	})
	return true
}

// emit processes one frame read; false stops reading.
func (a *attempt) emit(f frame) bool {
	a.lv.pause() // waiting for History or the consumer, not the network
	defer a.lv.resume()
	select {
	case <-a.recovered:
	case <-a.connCtx.Done():
		return false
	}
	if a.recErr != nil {
		return false
	}
	if a.ws {
		a.perr = a.s.processWS(a.ctx, a.out, a.st, f.msg)
	} else {
		a.perr = a.s.processSSE(a.connCtx, a.ctx, a.out, f)
	}
	return a.perr == nil && a.connCtx.Err() == nil
}

// bad counts a frame that did not decode.
func (a *attempt) bad(err error) {
	a.s.count(func(st *Stats) { st.Malformed++ })
	a.s.logger().Warn("skipped a frame that does not decode", "err", err)
}

// finish closes the connection once reading ended, releases its context
// and watchdogs, and says why it ended.
//
//go:noinline
func (a *attempt) finish() outcome {
	defer a.stop()
	a.recovering.Wait() // a connection that ended still gets what History had
	cause := context.Cause(a.connCtx)
	a.cancel(errDone)
	if a.recErr != nil {
		a.perr = a.recErr
	}
	a.stopKeepAlive()
	a.c.close()

	res := outcome{healthy: a.lv.healthy(), retryFloor: a.c.retryFloor()}
	if a.ctx.Err() != nil {
		return res
	}
	res.err = endCause(a.readErr, cause, a.perr, a.ws)
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
	k := &keepAliver{s: s, ctx: ctx, c: c, fail: fail}
	k.arm()
	return k.stop
}

// keepAliver is one connection's keep-alives: one object, not a closure
// and a variable apiece, since every idle stream holds one.
type keepAliver struct {
	s    *Stream
	ctx  context.Context
	c    liveConn
	fail context.CancelCauseFunc

	mu      sync.Mutex
	t       clock.Stopper
	stopped bool
	wg      sync.WaitGroup // a timer armed or firing
}

func (k *keepAliver) tick() {
	defer k.wg.Done()
	if err := k.c.send(k.ctx, wire.KeepAliveLine()); err != nil {
		k.fail(fmt.Errorf("sending keep_alive: %w", err))
		return
	}
	k.arm()
}

func (k *keepAliver) arm() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped || k.ctx.Err() != nil {
		return
	}
	k.wg.Add(1)
	k.t = k.s.clock.AfterFunc(k.s.cfg.KeepAlive, k.tick)
}

func (k *keepAliver) stop() {
	k.mu.Lock()
	k.stopped = true
	if k.t != nil && k.t.Stop() {
		k.wg.Done()
	}
	k.mu.Unlock()
	k.wg.Wait()
}
