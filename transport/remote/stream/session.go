package remotews

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
	msg     Message
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
func (l *liveness) received(m *Message) {
	l.frames.Add(1)
	if m == nil || m.ControlResponse == nil || l.initID == "" || m.ControlResponse.RequestID != l.initID {
		l.framed.Store(true)
	}
	if m != nil && m.Kind != KindKeepAlive {
		l.idle.kick()
	}
}

func (l *liveness) pause()  { l.stall.pause(); l.idle.pause() }
func (l *liveness) resume() { l.stall.resume(); l.idle.resume() }
func (l *liveness) stop()   { l.stall.stop(); l.idle.stop() }

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

var keepAliveLine = []byte("{\"type\":\"keep_alive\"}\n")

// session runs one connection: open it, recover what was missed, deliver
// until it ends.
func (s *Stream) session(ctx context.Context, out chan<- Update, onLink func(Link)) outcome {
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

	s.count(func(st *StreamStats) {
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

	frames := make(chan frame, frameQueue)
	emit := func(f frame) bool {
		select {
		case frames <- f:
			return true
		default:
		}
		lv.pause() // waiting for the consumer, not the network
		defer lv.resume()
		select {
		case frames <- f:
			return true
		case <-connCtx.Done():
			return false
		}
	}
	bad := func(err error) {
		s.count(func(st *StreamStats) { st.Malformed++ })
		s.log.Warn("skipped a frame that does not decode", "err", err)
	}
	var (
		wg      sync.WaitGroup
		readErr error
	)
	wg.Go(func() {
		defer close(frames)
		readErr = c.readLoop(connCtx, lv, emit, bad)
	})
	if ws && s.cfg.KeepAlive > 0 {
		wg.Go(func() { s.keepAlive(connCtx, c, cancel) })
	}

	var perr error
	if st.initID != "" {
		if err := c.send(connCtx, initializeLine(st.initID)); err != nil {
			perr = &ConnError{Cause: CauseDropped, Err: fmt.Errorf("sending initialize: %w", err)}
		}
	}
	if perr == nil && s.cfg.History != nil {
		if ws {
			perr = s.recoverWS(connCtx, ctx, out)
		} else {
			perr = s.recoverSSE(connCtx, ctx, out, 0)
		}
	}
	if perr == nil {
		for f := range frames {
			if ws {
				perr = s.processWS(ctx, out, st, f.msg)
			} else {
				perr = s.processSSE(connCtx, ctx, out, f)
			}
			if perr != nil {
				break
			}
		}
	}
	cause := context.Cause(connCtx)
	cancel(errDone)
	wg.Wait() // the reader has stopped before its connection closes
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

// keepAlive sends {"type":"keep_alive"} every KeepAlive until ctx ends. A
// failed write ends the connection.
func (s *Stream) keepAlive(ctx context.Context, c liveConn, fail context.CancelCauseFunc) {
	tick := make(chan struct{}, 1)
	for {
		t := s.clock.AfterFunc(s.cfg.KeepAlive, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-tick:
		}
		if err := c.send(ctx, keepAliveLine); err != nil {
			fail(fmt.Errorf("sending keep_alive: %w", err))
			return
		}
	}
}

func initializeLine(id string) []byte {
	type request struct {
		Subtype string `json:"subtype"`
	}
	b, _ := json.Marshal(struct {
		RequestID string  `json:"request_id"`
		Type      string  `json:"type"`
		Request   request `json:"request"`
	}{id, "control_request", request{"initialize"}})
	return append(b, '\n')
}

// deliver hands u to the consumer, waiting as long as it takes.
func deliver(ctx context.Context, out chan<- Update, u Update) error {
	select {
	case out <- u:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Stream) setLastID(id string) {
	s.lastID = id
	s.count(func(st *StreamStats) { st.LastEventID = id })
}

func (s *Stream) setLastSeq(n uint64) {
	s.lastSeq = n
	s.count(func(st *StreamStats) { st.LastSeq = n })
}

// canUseTool returns the request id of a can_use_tool prompt, "" for
// anything else.
func canUseTool(m Message) string {
	if m.Kind == KindControlRequest && m.ControlRequest != nil && m.ControlRequest.Subtype == SubtypeCanUseTool {
		return m.ControlRequest.RequestID
	}
	return ""
}

// seenWS reports whether m was delivered already: by uuid, or, for a
// permission prompt, by request id (the initialize answer lists prompts
// without their uuid).
func (s *Stream) seenWS(m Message) bool {
	if m.UUID != "" && s.win.has(m.UUID) {
		return true
	}
	if id := canUseTool(m); id != "" && s.win.has(requestKey(id)) {
		return true
	}
	return false
}

func (s *Stream) rememberWS(m Message) {
	if m.UUID != "" {
		s.win.add(m.UUID)
	}
	if id := canUseTool(m); id != "" {
		s.win.add(requestKey(id))
	}
}

// offerWS delivers m unless it was delivered before.
func (s *Stream) offerWS(ctx context.Context, out chan<- Update, m Message, src Source) error {
	if s.seenWS(m) {
		s.count(func(st *StreamStats) { st.Duplicates++ })
		return nil
	}
	if err := deliver(ctx, out, Update{Message: m, EventID: m.UUID, Source: src}); err != nil {
		return err
	}
	s.rememberWS(m)
	if src == SourceRecovered {
		s.count(func(st *StreamStats) { st.Recovered++ })
	}
	if m.UUID != "" && src != SourcePending {
		s.setLastID(m.UUID)
	}
	return nil
}

// processWS delivers one WebSocket frame. The answer to our initialize ends
// the replay and brings the pending prompts.
func (s *Stream) processWS(ctx context.Context, out chan<- Update, st *connState, m Message) error {
	src := SourceLive
	if st.replaying {
		src = SourceReplay
	}
	r := m.ControlResponse
	if r == nil || st.initID == "" || r.RequestID != st.initID {
		return s.offerWS(ctx, out, m, src)
	}
	st.replaying = false
	if err := s.offerWS(ctx, out, m, SourceLive); err != nil {
		return err
	}
	for _, p := range r.Pending {
		pm, err := pendingMessage(m.SessionID, p)
		if err != nil {
			s.count(func(st *StreamStats) { st.Malformed++ })
			s.log.Warn("skipped a pending permission request", "request_id", p.RequestID, "err", err)
			continue
		}
		if err := s.offerWS(ctx, out, pm, SourcePending); err != nil {
			return err
		}
	}
	return nil
}

// pendingMessage turns one of initialize's pending_permission_requests
// into the control_request message the server sent for it.
func pendingMessage(sessionID string, p ControlRequest) (Message, error) {
	line, err := json.Marshal(struct {
		Type      string          `json:"type"`
		RequestID string          `json:"request_id"`
		SessionID string          `json:"session_id,omitempty"`
		Request   json.RawMessage `json:"request"`
	}{"control_request", p.RequestID, sessionID, p.Raw})
	if err != nil {
		return Message{}, err
	}
	return Decode(line)
}

// recoverWS delivers what History holds after the last event we have. A
// live event History does not know (the server streamed it but did not
// store it) makes the first page fail; then it resumes after the last event
// History itself returned, and the window drops what comes twice.
func (s *Stream) recoverWS(connCtx, ctx context.Context, out chan<- Update) error {
	h, sid := s.cfg.History, s.cfg.SessionID
	after := s.lastID
	evs, more, err := h.EventsAfter(connCtx, sid, after)
	if err != nil && after != s.histID && connCtx.Err() == nil {
		s.log.Warn("history does not know the last live event; recovering from the last one it returned", "after_id", after, "err", err)
		after = s.histID
		evs, more, err = h.EventsAfter(connCtx, sid, after)
	}
	for {
		if err != nil {
			return &ConnError{Cause: CauseRecovery, Err: err}
		}
		before := after
		for _, raw := range evs {
			m, derr := Decode(raw)
			id := m.UUID
			if derr != nil {
				id = rawUUID(raw)
			}
			if id != "" {
				after, s.histID = id, id
			}
			if s.primeTo != "" { // before the resume point: remember, do not deliver
				if derr == nil {
					s.rememberWS(m)
				} else if id != "" {
					s.win.add(id)
				}
				if id == s.primeTo {
					s.primeTo = ""
					s.setLastID(id)
				}
				continue
			}
			if derr != nil {
				s.count(func(st *StreamStats) { st.Malformed++ })
				s.log.Warn("skipped a recovered event that does not decode", "uuid", id, "err", derr)
				continue
			}
			if err := s.offerWS(ctx, out, m, SourceRecovered); err != nil {
				return err
			}
			if id != "" {
				s.setLastID(id)
			}
		}
		if !more || len(evs) == 0 {
			break
		}
		if after == before {
			return &ConnError{Cause: CauseRecovery, Err: errors.New("a page of events carries no uuid to continue after")}
		}
		evs, more, err = h.EventsAfter(connCtx, sid, after)
	}
	if s.primeTo != "" {
		s.log.Warn("the resume point is not in the session's history; continuing from its end", "resume_after_id", s.primeTo)
		s.count(func(st *StreamStats) { st.Gaps++ })
		s.primeTo = ""
		if after != "" {
			s.setLastID(after)
		}
	}
	return nil
}

// processSSE delivers one v2 event in sequence order: an old one is a
// duplicate, one past a jump waits until History filled the gap.
func (s *Stream) processSSE(connCtx, ctx context.Context, out chan<- Update, f frame) error {
	if f.seq <= s.lastSeq {
		s.count(func(st *StreamStats) { st.Duplicates++ })
		return nil
	}
	if f.seq > s.lastSeq+1 {
		s.count(func(st *StreamStats) { st.Gaps++ })
		if s.cfg.History != nil {
			if err := s.recoverSSE(connCtx, ctx, out, f.seq-1); err != nil {
				return err
			}
		}
		if f.seq <= s.lastSeq {
			s.count(func(st *StreamStats) { st.Duplicates++ })
			return nil
		}
		if f.seq > s.lastSeq+1 {
			s.log.Warn("events missing from the stream could not be recovered", "after", s.lastSeq, "next", f.seq)
		}
	}
	if !f.skip {
		id := f.eventID
		if id == "" {
			id = f.msg.UUID
		}
		if err := deliver(ctx, out, Update{Message: f.msg, Seq: f.seq, EventID: id, Source: SourceLive}); err != nil {
			return err
		}
	}
	s.setLastSeq(f.seq)
	return nil
}

// recoverSSE delivers v2 events after the last sequence number we have,
// from History, until it has reached until (0: the end of History).
func (s *Stream) recoverSSE(connCtx, ctx context.Context, out chan<- Update, until uint64) error {
	for {
		evs, more, err := s.cfg.History.CodeEventsAfter(connCtx, s.cfg.SessionID, s.lastSeq)
		if err != nil {
			return &ConnError{Cause: CauseRecovery, Err: err}
		}
		before := s.lastSeq
		for _, raw := range evs {
			v, err := DecodeV2(Event{Data: string(raw)})
			if err != nil {
				s.count(func(st *StreamStats) { st.Malformed++ })
				s.log.Warn("skipped a recovered event that does not decode", "err", err)
				if seq, ok := rawSeq(raw); ok && seq > s.lastSeq {
					s.setLastSeq(seq) // it will never decode; do not ask again
				}
				continue
			}
			if v.SequenceNum <= s.lastSeq {
				s.count(func(st *StreamStats) { st.Duplicates++ })
				continue
			}
			if v.Message.Kind != KindKeepAlive {
				id := v.EventID
				if id == "" {
					id = v.Message.UUID
				}
				u := Update{Message: v.Message, Seq: v.SequenceNum, EventID: id, Source: SourceRecovered}
				if err := deliver(ctx, out, u); err != nil {
					return err
				}
				s.count(func(st *StreamStats) { st.Recovered++ })
			}
			s.setLastSeq(v.SequenceNum)
		}
		if !more || s.lastSeq == before || (until > 0 && s.lastSeq >= until) {
			return nil
		}
	}
}

// rawUUID digs the uuid out of an event that did not decode.
func rawUUID(raw json.RawMessage) string {
	var v struct {
		UUID string `json:"uuid"`
	}
	_ = json.Unmarshal(raw, &v)
	return v.UUID
}

// rawSeq digs the sequence number out of a v2 envelope.
func rawSeq(raw json.RawMessage) (uint64, bool) {
	var v struct {
		SequenceNum json.RawMessage `json:"sequence_num"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return 0, false
	}
	n, ok, err := sequence(v.SequenceNum)
	return n, ok && err == nil
}
