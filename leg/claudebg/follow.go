package claudebg

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
)

// Event kinds (message.RemoteEvent.Kind) of a background agent.
const (
	KindTerminal = "terminal" // its output, stripped of escapes
	KindState    = "state"    // its record changed: tempo, state, detail, needs, outcome
	KindSettled  = "settled"  // it ended; its outcome is the text
)

// Bounds of what one subscription turns into events.
const (
	// MaxEventText caps the text of one event, in runes: output past it
	// starts another event.
	MaxEventText = 8 << 10
	maxRawPatch  = 16 << 10 // a state patch kept raw on its event, in bytes
	maxDetail    = 500      // runes of a record's detail on a state event
)

// Run follows every live agent the daemon lists, polling the list every
// PollEvery: one goroutine a subscription, each ended with ctx.
func (l *Leg) Run(ctx context.Context, in chan<- message.Event) error {
	l.emitter.Attach(in)
	defer l.emitter.Close()
	defer l.wg.Wait()
	defer func() {
		if l.timer != nil {
			l.timer.Stop()
		}
	}()
	for {
		l.poll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-l.poke:
		case <-l.tick():
		}
	}
}

// tick is a channel closed PollEvery from now; the one before is stopped.
func (l *Leg) tick() <-chan struct{} {
	if l.timer != nil {
		l.timer.Stop()
	}
	c, t := clock.After(l.clk, l.cfg.PollEvery)
	l.timer = t
	return c
}

// poll lists the agents and follows those not followed yet.
func (l *Leg) poll(ctx context.Context) {
	recs, err := l.list(ctx)
	if err != nil {
		return // noted by list
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	listed := map[string]bool{}
	for _, r := range recs {
		listed[r.Short] = true
		if !r.live() || l.followed[r.Short] {
			continue
		}
		if len(l.followed) >= l.cfg.MaxFollowed {
			l.unfollowed.Add(1)
			continue
		}
		tail := l.cfg.Tail
		if l.seen[r.Short] {
			tail = 0 // followed before: what it said then was shown
		}
		l.followed[r.Short] = true
		l.wg.Add(1)
		go l.follow(ctx, r.Short, tail)
	}
	for s := range l.seen { // bounded by what the daemon lists
		if !listed[s] && !l.followed[s] {
			delete(l.seen, s)
		}
	}
}

// snapshot is a subscription's first frame.
type snapshot struct {
	Type       string          `json:"type"`
	Record     json.RawMessage `json:"record"`
	StreamTail []string        `json:"streamTail"`
}

// frame is any later one.
type frame struct {
	Type    string          `json:"type"`
	Line    string          `json:"line"`
	Patch   json.RawMessage `json:"patch"`
	Outcome string          `json:"outcome"`
}

// follow streams one agent's output as events until it settles, the
// daemon closes, or ctx ends; the next poll follows it again if it is
// still listed live.
func (l *Leg) follow(ctx context.Context, short string, tail int) {
	defer l.wg.Done()
	defer func() {
		l.mu.Lock()
		delete(l.followed, short)
		l.mu.Unlock()
	}()
	conn, err := l.client.dial(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	line, err := request(map[string]any{"proto": Proto, "op": "subscribe", "short": short, "tail": tail})
	if err != nil {
		return
	}
	_ = conn.SetDeadline(time.Now().Add(exchangeTimeout)) // for the snapshot; an idle agent then says nothing for long
	if _, err := conn.Write(line); err != nil {
		return
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	first, err := readLine(r)
	if err != nil {
		return
	}
	var snap snapshot
	var rec record
	if json.Unmarshal(first, &snap) != nil || snap.Type != "snapshot" || json.Unmarshal(snap.Record, &rec) != nil {
		var a answer
		if json.Unmarshal(first, &a) == nil && a.OK != nil {
			_ = l.note(a.refusal("subscribe")) // ENOJOB: it ended between list and subscribe
		} else {
			l.dropped.Add(1)
		}
		return
	}
	_ = conn.SetDeadline(time.Time{})
	l.mu.Lock()
	l.seen[short] = true // its replay is shown: a later subscription asks none
	l.mu.Unlock()
	rec.Short = short
	s := &stream{l: l, ctx: ctx, rec: rec}
	s.emit(KindState, s.summary(), nil)
	for _, t := range snap.StreamTail {
		s.output(t)
	}
	s.flush()
	for {
		b, err := readLine(r)
		if errors.Is(err, errLineTooLong) {
			l.dropped.Add(1)
			continue
		}
		if err != nil {
			s.flush()
			if ctx.Err() == nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
				s.emit(KindState, "the daemon closed the agent's stream", nil)
			}
			return
		}
		var f frame
		if json.Unmarshal(b, &f) != nil {
			l.dropped.Add(1)
			continue
		}
		switch f.Type {
		case "stream":
			s.output(f.Line)
			if !lineWaiting(r) && s.l.clk.Now().Sub(s.shown) >= s.l.cfg.OutputEvery {
				s.flush()
			}
		case "state":
			s.flush()
			s.patch(f.Patch)
		case "settled":
			s.flush()
			s.emit(KindSettled, clean(f.Outcome, 40), nil)
			return
		default:
			l.dropped.Add(1)
		}
	}
}

// stream is one subscription's events: output gathered until it is
// flushed, and the agent's record as patches leave it.
type stream struct {
	l     *Leg
	ctx   context.Context
	rec   record
	text  strings.Builder
	last  string    // the last output event's text: a repaint that changes nothing is not shown again
	shown time.Time // when output was last flushed
}

func (s *stream) output(raw string) {
	t := stripTerminal(raw)
	if t == "" {
		return
	}
	if s.text.Len() > 0 {
		s.text.WriteByte('\n')
	}
	s.text.WriteString(t)
	if s.text.Len() >= 4*MaxEventText { // runes take at most 4 bytes: past any event's cap
		s.flush()
	}
}

// flush emits what output gathered, in events of at most MaxEventText
// runes.
func (s *stream) flush() {
	t := s.text.String()
	s.text.Reset()
	if t == "" || t == s.last {
		return
	}
	s.last, s.shown = t, s.l.clk.Now()
	for t != "" {
		part := t
		if n := runeIndex(t, MaxEventText); n < len(t) {
			part, t = t[:n], t[n:]
		} else {
			t = ""
		}
		s.emit(KindTerminal, part, nil)
	}
}

// runeIndex is the byte index of s's nth rune, or len(s).
func runeIndex(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// patch merges a state frame's fields into the record (a patch that does
// not fit is dropped, counted) and emits it.
func (s *stream) patch(p json.RawMessage) {
	next := s.rec
	if len(p) == 0 || json.Unmarshal(p, &next) != nil {
		s.l.dropped.Add(1)
		return
	}
	next.Short = s.rec.Short
	s.rec = next
	var raw json.RawMessage
	if len(p) <= maxRawPatch {
		raw = p
	}
	s.emit(KindState, s.summary(), raw)
}

// summary is the record as one line: its status, what it needs, its
// detail.
func (s *stream) summary() string {
	parts := []string{s.rec.status()}
	if s.rec.Needs != "" {
		parts = append(parts, "needs "+clean(oneLine(s.rec.Needs), 100))
	}
	if s.rec.Detail != "" {
		parts = append(parts, clean(oneLine(s.rec.Detail), maxDetail))
	}
	return strings.Join(parts, ": ")
}

func (s *stream) emit(kind, text string, raw json.RawMessage) {
	s.l.emitter.Emit(s.ctx, message.Event{Type: message.EventRemote, Remote: &message.RemoteEvent{
		SessionID: clean(s.rec.SessionID, 64), Address: AddressPrefix + s.rec.Short, Kind: kind, Text: text, Raw: raw}})
}
