package stream

import (
	"context"
	"errors"

	"github.com/sessiongateway/gateway/leg/remote/wire"
)

// Deliver hands one update to the consumer, waiting as long as the
// consumer needs: backpressure is the full policy. It returns an error only
// when ctx has ended. Calls come one at a time, in order: on Run's
// goroutine, or, for what History fills in as a connection opens, on one
// Run waits for before it delivers anything else.
type Deliver func(ctx context.Context, u Update) error

// ToChannel delivers to out.
func ToChannel(out chan<- Update) Deliver {
	return func(ctx context.Context, u Update) error {
		select {
		case out <- u:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Stream) setLastID(id string) {
	s.lastID = id
	s.count(func(st *Stats) { st.LastEventID = id })
}

func (s *Stream) setLastSeq(n uint64) {
	s.lastSeq = n
	s.count(func(st *Stats) { st.LastSeq = n })
}

// canUseTool returns the request id of a can_use_tool prompt, "" for
// anything else.
func canUseTool(m wire.Message) string {
	if m.Kind == wire.KindControlRequest && m.ControlRequest != nil && m.ControlRequest.Subtype == wire.SubtypeCanUseTool {
		return m.ControlRequest.RequestID
	}
	return ""
}

// seenWS reports whether m was delivered already: by uuid, or, for a
// permission prompt, by request id (the initialize answer lists prompts
// without their uuid).
func (s *Stream) seenWS(m wire.Message) bool {
	if m.UUID != "" && s.win.has(m.UUID) {
		return true
	}
	if id := canUseTool(m); id != "" && s.win.has(requestKey(id)) {
		return true
	}
	return false
}

func (s *Stream) rememberWS(m wire.Message) {
	if m.UUID != "" {
		s.win.add(m.UUID)
	}
	if id := canUseTool(m); id != "" {
		s.win.add(requestKey(id))
	}
}

// offerWS delivers m unless it was delivered before.
func (s *Stream) offerWS(ctx context.Context, out Deliver, m wire.Message, src Source) error {
	if s.seenWS(m) {
		s.count(func(st *Stats) { st.Duplicates++ })
		return nil
	}
	if err := out(ctx, Update{Message: m, EventID: m.UUID, Source: src}); err != nil {
		return err
	}
	s.rememberWS(m)
	if src == SourceRecovered {
		s.count(func(st *Stats) { st.Recovered++ })
	}
	if m.UUID != "" && src != SourcePending {
		s.setLastID(m.UUID)
	}
	return nil
}

// processWS delivers one WebSocket frame. The answer to our initialize ends
// the replay and brings the pending prompts.
func (s *Stream) processWS(ctx context.Context, out Deliver, st *connState, m wire.Message) error {
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
		pm, err := wire.PendingMessage(m.SessionID, p)
		if err != nil {
			s.count(func(st *Stats) { st.Malformed++ })
			s.logger().Warn("skipped a pending permission request", "request_id", p.RequestID, "err", err)
			continue
		}
		if err := s.offerWS(ctx, out, pm, SourcePending); err != nil {
			return err
		}
	}
	return nil
}

// recoverWS delivers what History holds after the last event we have. A
// live event History does not know (the server streamed it but did not
// store it) makes the first page fail; then it resumes after the last event
// History itself returned, and the window drops what comes twice.
func (s *Stream) recoverWS(connCtx, ctx context.Context, out Deliver) error {
	h, sid := s.cfg.History, s.cfg.SessionID
	after := s.lastID
	evs, more, err := h.EventsAfter(connCtx, sid, after)
	if err != nil && after != s.histID && connCtx.Err() == nil {
		s.logger().Warn("history does not know the last live event; recovering from the last one it returned", "after_id", after, "err", err)
		after = s.histID
		evs, more, err = h.EventsAfter(connCtx, sid, after)
	}
	for {
		if err != nil {
			return &ConnError{Cause: CauseRecovery, Err: err}
		}
		before := after
		for _, raw := range evs {
			m, derr := wire.Decode(raw)
			id := m.UUID
			if derr != nil {
				id = wire.UUIDOf(raw)
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
				s.count(func(st *Stats) { st.Malformed++ })
				s.logger().Warn("skipped a recovered event that does not decode", "uuid", id, "err", derr)
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
		s.logger().Warn("the resume point is not in the session's history; continuing from its end", "resume_after_id", s.primeTo)
		s.count(func(st *Stats) { st.Gaps++ })
		s.primeTo = ""
		if after != "" {
			s.setLastID(after)
		}
	}
	return nil
}

// processSSE delivers one v2 event in sequence order: an old one is a
// duplicate, one past a jump waits until History filled the gap.
func (s *Stream) processSSE(connCtx, ctx context.Context, out Deliver, f frame) error {
	if f.seq <= s.lastSeq {
		s.count(func(st *Stats) { st.Duplicates++ })
		return nil
	}
	if f.seq > s.lastSeq+1 {
		s.count(func(st *Stats) { st.Gaps++ })
		if s.cfg.History != nil {
			if err := s.recoverSSE(connCtx, ctx, out, f.seq-1); err != nil {
				return err
			}
		}
		if f.seq <= s.lastSeq {
			s.count(func(st *Stats) { st.Duplicates++ })
			return nil
		}
		if f.seq > s.lastSeq+1 {
			s.logger().Warn("events missing from the stream could not be recovered", "after", s.lastSeq, "next", f.seq)
		}
	}
	if !f.skip {
		id := f.eventID
		if id == "" {
			id = f.msg.UUID
		}
		if err := out(ctx, Update{Message: f.msg, Seq: f.seq, EventID: id, Source: SourceLive}); err != nil {
			return err
		}
	}
	s.setLastSeq(f.seq)
	return nil
}

// recoverSSE delivers v2 events after the last sequence number we have,
// from History, until it has reached until (0: the end of History).
func (s *Stream) recoverSSE(connCtx, ctx context.Context, out Deliver, until uint64) error {
	for {
		evs, more, err := s.cfg.History.CodeEventsAfter(connCtx, s.cfg.SessionID, s.lastSeq)
		if err != nil {
			return &ConnError{Cause: CauseRecovery, Err: err}
		}
		before := s.lastSeq
		for _, raw := range evs {
			v, err := wire.DecodeV2(wire.Event{Data: string(raw)})
			if err != nil {
				s.count(func(st *Stats) { st.Malformed++ })
				s.logger().Warn("skipped a recovered event that does not decode", "err", err)
				if seq, ok := wire.SequenceOf(raw); ok && seq > s.lastSeq {
					s.setLastSeq(seq) // it will never decode; do not ask again
				}
				continue
			}
			if v.SequenceNum <= s.lastSeq {
				s.count(func(st *Stats) { st.Duplicates++ })
				continue
			}
			if v.Message.Kind != wire.KindKeepAlive {
				id := v.EventID
				if id == "" {
					id = v.Message.UUID
				}
				u := Update{Message: v.Message, Seq: v.SequenceNum, EventID: id, Source: SourceRecovered}
				if err := out(ctx, u); err != nil {
					return err
				}
				s.count(func(st *Stats) { st.Recovered++ })
			}
			s.setLastSeq(v.SequenceNum)
		}
		if !more || s.lastSeq == before || (until > 0 && s.lastSeq >= until) {
			return nil
		}
	}
}
