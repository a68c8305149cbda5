package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

// follow is one followed session.
type follow struct {
	stream *stream.Stream
	cancel context.CancelFunc
	done   chan struct{}
	link   stream.Link
	// prompts are the can_use_tool requests seen and not settled, by
	// request id, so a cancel can say which prompt it withdraws; at most
	// maxOpenPrompts holding at most maxPromptBytes (see keepPrompt).
	// promptsFull: the cap was logged.
	prompts     *bounded.Map[string, message.PermissionRequest]
	promptsFull bool
	// assistant holds the merged copy of each streamed message.
	assistant map[string]wire.Assistant
	// settled are the prompts of this session settled by someone else
	// (answered from the web, withdrawn), by request id, so that a local
	// answer is refused rather than told it won; at most maxSettled, made
	// on the first one. l.mu guards the pointer; the map locks itself.
	settled *bounded.Map[string, message.PromptSettledError]
	// err is why the stream ended; set before done is closed.
	err error
	// Turn tracking, to send a remote answer back to the local senders it
	// answers: waiting are senders whose message the session has (its echo
	// came) but whose turn has not begun; current are those of the running
	// turn, which began with its first assistant message.
	waiting, current []replyTo
	turnActive       bool

	// info is what the session told about itself; l.mu guards it, as Info
	// reads it from other goroutines.
	info message.SessionInfo
	// asked are mode and model changes seen and not yet answered.
	asked map[string]asked
	// refused are the unserved requests answered with an error, toRefuse
	// those still to answer; unserved, while reading the history, those
	// the history shows no answer to.
	refused  map[string]bool
	toRefuse []wire.ControlRequest
	unserved map[string]wire.ControlRequest
}

// retryable says the stream has ended by giving up on a failure that may
// pass (not a refusal of credentials or of the session).
func (f *follow) retryable() bool {
	var perm *stream.PermanentError
	return f.ended() && f.err != nil && !errors.As(f.err, &perm)
}

// ended says the follow's goroutines are done.
func (f *follow) ended() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// Run follows the configured sessions until ctx ends.
func (l *Leg) Run(ctx context.Context, in chan<- message.Event) error {
	em := leg.NewEmitter(message.ProtocolRemote, l.cfg.Now)
	em.Attach(in)
	var wg sync.WaitGroup
	defer func() {
		l.stopListing()
		l.mu.Lock()
		for _, f := range l.links {
			f.cancel()
		}
		l.mu.Unlock()
		wg.Wait()
		em.Close()
	}()
	t := time.NewTicker(l.cfg.ListInterval)
	defer t.Stop()
	for {
		select {
		case <-l.refreshing():
		case <-ctx.Done():
			return nil
		}
		l.mu.Lock()
		listed, err := l.listed, l.listErr
		l.mu.Unlock()
		if err != nil {
			listed = nil // as before: an unlisted account follows only the named ids
		}
		want := map[string]bool{}
		for _, id := range l.cfg.Follow {
			if id != FollowAll {
				want[id] = true
			}
		}
		l.mu.Lock()
		for _, rs := range listed {
			if rs.Status != "archived" && (l.followsAll() || l.createdLocked(rs.ID)) {
				want[rs.ID] = true
			}
		}
		if err == nil {
			// With FollowAll, a session gone from the list (archived,
			// deleted) is no longer followed, nor counted by Ready. Its
			// follow is parked, so that if it comes back its stream
			// resumes where it stopped.
			for id, f := range l.links {
				if !want[id] {
					f.cancel()
					delete(l.links, id)
					if f.stream != nil {
						l.parked.Put(id, f)
					}
				}
			}
		}
		refused := 0
		for id := range want {
			f, ok := l.links[id]
			if !ok && len(l.links) >= l.cfg.MaxFollowed {
				refused++
				continue
			}
			switch {
			case ok && f.ended() && (err == nil || f.retryable()):
				// It gave up: try again. After a refusal (401, 404) only
				// once the list works again, so a rotated token file or a
				// restored session brings it back.
				l.runLocked(ctx, &wg, id, f, em)
			case ok:
			default:
				if f, ok = l.parked.Take(id); ok {
					l.links[id] = f
					l.runLocked(ctx, &wg, id, f, em)
				} else {
					l.startLocked(ctx, &wg, id, em)
				}
			}
		}
		l.refusedLocked(refused)
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-l.relist:
		}
	}
}

// refusedLocked counts the n sessions a listing found past MaxFollowed and
// logs when refusing starts and ends; l.mu must be held.
func (l *Leg) refusedLocked(n int) {
	l.refused += uint64(n)
	switch {
	case n > 0 && !l.refusing:
		l.log.Warn("remote sessions past the followed cap are not followed", "max_followed", l.cfg.MaxFollowed,
			"refused", n, "refused_total", l.refused)
	case n == 0 && l.refusing:
		l.log.Info("every listed remote session is followed again", "refused_total", l.refused)
	}
	l.refusing = n > 0
}

// startLocked starts following id; l.mu must be held. One goroutine per
// session: the stream translates and emits its updates on its own, so an
// idle session costs one stack and no queue.
func (l *Leg) startLocked(ctx context.Context, wg *sync.WaitGroup, id string, em *leg.Emitter) {
	f := &follow{prompts: newPrompts(), assistant: map[string]wire.Assistant{}}
	l.links[id] = f
	l.runLocked(ctx, wg, id, f, em)
}

// runLocked runs f's goroutine, again if f ran before; l.mu must be held.
// A follow that made its stream keeps it, with its resume point, de-dup
// window and turn state: the stream's recovery at its next connect
// delivers what the session did meanwhile as live events, so an echo, a
// turn and its answer in that gap still reach their sender. Only a follow
// that never made its stream reads the history (and publishes none of it).
func (l *Leg) runLocked(ctx context.Context, wg *sync.WaitGroup, id string, f *follow, em *leg.Emitter) {
	prev := f.done // the previous run's goroutine, if any, which may still be ending
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	f.cancel, f.done = cancel, done
	deliver := func(ctx context.Context, u stream.Update) error {
		for _, ev := range l.translate(id, f, u) {
			em.Emit(ctx, ev)
		}
		l.postRefusals(ctx, id, f)
		return ctx.Err()
	}
	wg.Go(func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		f.err = l.run(fctx, id, f, deliver, em)
		l.ended(fctx, id, f, em)
	})
}

// ended reports a stream that gave up.
//
//go:noinline
func (l *Leg) ended(ctx context.Context, id string, f *follow, em *leg.Emitter) {
	if f.err != nil && ctx.Err() == nil {
		l.log.Warn("remote session stream ended", "session", id, "err", f.err)
		l.onLink(ctx, id, f, stream.Link{State: stream.LinkGaveUp, Err: f.err}, em)
	}
}

// run catches up with the session's history, then keeps it live.
func (l *Leg) run(ctx context.Context, id string, f *follow, deliver stream.Deliver, em *leg.Emitter) error {
	select {
	case l.opening <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	var once sync.Once
	opened := func() { once.Do(func() { <-l.opening }) }
	defer opened()
	st := f.stream // set by an earlier run of f, whose goroutine has ended
	if st == nil {
		var err error
		if st, err = l.newStream(ctx, id, f, em); st == nil || err != nil {
			return err
		}
	}
	return st.RunFunc(ctx, deliver, func(k stream.Link) {
		opened() // connected, or failed: the next session may open
		l.onLink(ctx, id, f, k, em)
	})
}

// newStream catches up with the session's history and makes its stream;
// nil without an error when ctx ended first. Apart from run, so that the
// goroutine an idle session keeps waiting does not hold this frame: its
// stack is most of what the session costs.
//
//go:noinline
func (l *Leg) newStream(ctx context.Context, id string, f *follow, em *leg.Emitter) (*stream.Stream, error) {
	sc := stream.NewConfig(l.cfg.BaseURL, l.cfg.OrgUUID, id)
	sc.Transport, sc.Header, sc.History = l.cfg.Transport, l.cfg.API.StreamHeader, l.cfg.API
	sc.Logger = l.log // the stream adds the session to its records
	if l.cfg.Tune != nil {
		l.cfg.Tune(&sc)
	}
	l.mu.Lock()
	created := l.createdLocked(id)
	l.mu.Unlock()
	// A session the leg created is young: the stream delivers its whole
	// history as live events, so its first turn is watched too.
	if !created {
		afterID, afterSeq, seen, err := l.backlog(ctx, id, f, em)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, nil
		case err != nil:
			// The stream then delivers the whole history itself.
			l.log.Warn("reading the session's history failed; following it from its start", "session", id, "err", err)
		default:
			sc.ResumeAfterID, sc.ResumeAfterSeq, sc.Seen = afterID, afterSeq, seen
		}
	}
	st, err := stream.New(sc)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	f.stream = st
	l.mu.Unlock()
	return st, nil
}

// backlog pages through the session's history up to now. Its events are
// not published (a session may have thousands): only the permission prompts
// still open at its end are, so a prompt raised before the gateway started
// can be answered. It returns the resume point for the live stream and, on
// the WebSocket, the uuids read, so the stream need not read them again.
func (l *Leg) backlog(ctx context.Context, id string, f *follow, em *leg.Emitter) (string, uint64, []string, error) {
	var (
		afterID  string
		afterSeq uint64
		seen     []string // WebSocket uuids, for the stream's de-dup window
		n, bad   int
	)
	for pages := 1; ; pages++ {
		var (
			page []json.RawMessage
			more bool
			err  error
		)
		if l.cfg.Transport == stream.TransportSSE {
			page, more, err = l.cfg.API.CodeEventsAfter(ctx, id, afterSeq)
		} else {
			page, more, err = l.cfg.API.EventsAfter(ctx, id, afterID)
		}
		if err != nil {
			return "", 0, nil, err
		}
		beforeID, beforeSeq := afterID, afterSeq
		for _, raw := range page {
			m, uid, seq, err := decodeHistory(l.cfg.Transport, raw)
			if seq > afterSeq {
				afterSeq = seq
			}
			if uid != "" {
				afterID = uid
				seen = append(seen, uid)
				if len(seen) > 2*stream.DefaultDedupWindow { // keep the newest; the stream takes its window's worth
					seen = append(seen[:0], seen[len(seen)-stream.DefaultDedupWindow:]...)
				}
			}
			if err != nil {
				// It will never decode: skip it, past it, as the stream's
				// recovery does. Giving up here would make the stream
				// deliver the whole history again as live events.
				if bad++; bad == 1 {
					l.log.Warn("skipped a history event that does not decode", "session", id, "uuid", uid, "sequence", seq, "err", err)
				}
				continue
			}
			n++
			for _, ev := range l.track(id, f, m, l.cfg.Now()) {
				em.Emit(ctx, ev)
			}
		}
		if !more || len(page) == 0 {
			break
		}
		if pages >= maxBacklogPages {
			// A history that does not end (or a server that pages for
			// ever) must not hold an opening slot: the stream's recovery
			// reads on from here, as live events.
			l.log.Warn("the session's history is longer than the pages read at start; the stream reads on", "session", id, "pages", pages)
			break
		}
		if afterID == beforeID && afterSeq == beforeSeq {
			// Nothing on the page to continue after: asking again would
			// get the same page. The stream's recovery reads on from here.
			l.log.Warn("a page of the session's history has no event to continue after", "session", id)
			break
		}
	}
	if bad > 1 {
		l.log.Warn("skipped history events that do not decode", "session", id, "skipped", bad)
	}
	l.log.Debug("caught up with the session's history", "session", id, "events", n, "open_prompts", f.prompts.Len())
	for _, req := range f.prompts.Values() {
		em.Emit(ctx, message.Event{Type: message.EventPermission, Leg: message.ProtocolRemote, Time: l.cfg.Now(), Permission: &req})
	}
	// Requests the gateway does not serve, still unanswered, would hold
	// the session up for ever: refuse them now.
	for _, cr := range f.unserved {
		if f.refuse(cr) {
			em.Emit(ctx, message.Event{Type: message.EventDrop, Leg: message.ProtocolRemote, Time: l.cfg.Now(),
				Drop: &message.Drop{MsgID: cr.RequestID, From: bridgeAddr(id), Reason: message.DropUnserved}})
		}
	}
	f.unserved = nil
	l.postRefusals(ctx, id, f)
	return afterID, afterSeq, seen, nil
}

// maxSettled bounds a session's prompts remembered as settled elsewhere.
const maxSettled = 256

// settledElsewhere notes that someone else settled prompt rid of session
// id; it runs on the session's goroutine, before the event is emitted.
func (l *Leg) settledElsewhere(f *follow, rid string, e message.PromptSettledError) {
	if rid == "" {
		return
	}
	l.mu.Lock()
	if f.settled == nil {
		f.settled = bounded.NewMap[string, message.PromptSettledError](maxSettled)
	}
	m := f.settled
	l.mu.Unlock()
	m.Put(rid, e)
}

// settledBy says whether the leg saw prompt rid of session id settled by
// someone else, and how.
func (l *Leg) settledBy(id, rid string) (message.PromptSettledError, bool) {
	l.mu.Lock()
	var m *bounded.Map[string, message.PromptSettledError]
	if f, ok := l.links[id]; ok {
		m = f.settled
	}
	l.mu.Unlock()
	if m == nil {
		return message.PromptSettledError{}, false
	}
	return m.Get(rid)
}

// maxBacklogPages bounds the history pages read before the stream opens.
const maxBacklogPages = 1000

// decodeHistory decodes one history event, giving its resume point (the
// WebSocket's uuid, the event stream's sequence number) even when the
// event itself does not decode.
func decodeHistory(tr stream.Transport, raw json.RawMessage) (m wire.Message, id string, seq uint64, err error) {
	if tr == stream.TransportSSE {
		v, err := wire.DecodeV2(wire.Event{Data: string(raw)})
		if err != nil {
			seq, _ = wire.SequenceOf(raw)
			return wire.Message{}, "", seq, fmt.Errorf("history event %d: %w", seq, err)
		}
		return v.Message, "", v.SequenceNum, nil
	}
	if m, err = wire.Decode(raw); err != nil {
		id = wire.UUIDOf(raw)
		return m, id, 0, fmt.Errorf("history event %q: %w", id, err)
	}
	return m, m.UUID, 0, nil
}

// maxOpenPrompts caps a session's open permission prompts, as the router
// caps its pending list (1024); maxPromptBytes caps what they hold: each
// holds its tool's input, up to a wire line (8 MiB), so the count alone
// would let one session make the gateway hold gigabytes.
const (
	maxOpenPrompts = 1024
	maxPromptBytes = 16 << 20
)

func newPrompts() *bounded.Map[string, message.PermissionRequest] {
	return bounded.NewWeighedMap[string](maxOpenPrompts, maxPromptBytes, message.PermissionRequest.Bytes)
}

// keepPrompt records an open prompt of session id. Past the count or the
// byte budget the oldest are forgotten: a session waits on its newest
// prompts, and the router, which has the old ones, still settles them when
// they are withdrawn or answered (those name the request); but read from
// the history, they are never raised. Each drop is counted (queue-full)
// and the first is logged, once per session.
func (l *Leg) keepPrompt(id string, f *follow, req message.PermissionRequest, now time.Time) []message.Event {
	forgot := f.prompts.Put(req.RequestID, req)
	if len(forgot) == 0 {
		return nil
	}
	if !f.promptsFull {
		f.promptsFull = true
		l.log.Warn("a session's open permission prompts are past their cap; forgetting the oldest", "session", id,
			"max", maxOpenPrompts, "max_bytes", maxPromptBytes)
	}
	evs := make([]message.Event, 0, len(forgot))
	for _, old := range forgot {
		evs = append(evs, message.Event{Type: message.EventDrop, Leg: message.ProtocolRemote, Time: now,
			Drop: &message.Drop{MsgID: old, From: bridgeAddr(id), Reason: message.DropQueueFull}})
	}
	return evs
}

// track keeps f.prompts current with one history event; it returns the
// drop of a prompt forgotten past the cap.
func (l *Leg) track(id string, f *follow, m wire.Message, now time.Time) []message.Event {
	addr := bridgeAddr(id)
	switch m.Kind {
	case wire.KindControlRequest:
		switch cr := m.ControlRequest; {
		case cr.Subtype == wire.SubtypeCanUseTool:
			return l.keepPrompt(id, f, permission(id, addr, cr, now), now)
		case !cr.Subtype.FromClient() && cr.RequestID != "":
			if f.unserved == nil || len(f.unserved) >= maxWaiters {
				f.unserved = map[string]wire.ControlRequest{} // a flood: keep the newest
			}
			f.unserved[cr.RequestID] = *cr
		}
	case wire.KindControlCancelRequest:
		f.prompts.Delete(m.Cancel.RequestID)
		delete(f.unserved, m.Cancel.RequestID)
	case wire.KindControlResponse:
		if cr := m.ControlResponse; cr != nil {
			if cr.Decision != nil {
				f.prompts.Delete(cr.RequestID)
			}
			delete(f.unserved, cr.RequestID)
		}
	case wire.KindSystem:
		l.system(id, f, m, now)
	case wire.KindUser:
		// The echo of a post read here is history: its turn will not be
		// watched, and it must not make a later turn answer its sender.
		if ev, _, ok := l.echoed(m.UUID, now); ok {
			l.forgetUnechoed(id, m.UUID)
			return []message.Event{ev}
		}
	}
	return nil
}

func (l *Leg) onLink(ctx context.Context, id string, f *follow, k stream.Link, em *leg.Emitter) {
	l.mu.Lock()
	f.link = k
	l.mu.Unlock()
	ml := &message.Link{SessionID: id, State: k.State, Attempt: k.Attempt}
	if k.Err != nil {
		ml.Error = k.Err.Error()
	}
	em.Emit(ctx, message.Event{Type: message.EventLink, Leg: message.ProtocolRemote, Time: l.cfg.Now(), Link: ml})
}
