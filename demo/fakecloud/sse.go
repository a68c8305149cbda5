package fakecloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/sessiongateway/gateway/internal/clock"
)

// Sources of a v2 event: what the session's worker produced (Emit) or what a
// client posted.
const (
	sourceWorker = "worker"
	sourceClient = "client"
)

// eventMeta is what the v2 envelope needs of a stored event.
type eventMeta struct {
	typ       string
	source    string
	createdAt string
}

// sseBatch bounds the events a stream builds under the lock at once, so a
// long backlog starts going out at once.
const sseBatch = 256

// stream is one open v2 events stream. It keeps no queue: the session's
// store is the buffer and the stream its own cursor into it, so a slow
// reader costs nothing and needs no full policy. wake says the store grew;
// kill asks the handler to end.
type stream struct {
	wake chan struct{} // buffered 1; a pending wake covers any number of events
	kill chan closeReq // buffered 1; the first request wins
}

func (st *stream) poke() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

func (st *stream) stop(c closeReq) {
	select {
	case st.kill <- c:
	default:
	}
}

// envelopes returns the v2 events of ss with sequence numbers from+1 to
// to, that is stored indexes from to to-1; s.mu must be held.
func (ss *session) envelopes(from, to uint64) []json.RawMessage {
	out := make([]json.RawMessage, 0, to-from)
	var buf []byte
	for i := from; i < to; i++ {
		n := len(buf)
		buf = ss.appendEnvelope(buf, i)
		out = append(out, buf[n:len(buf):len(buf)])
	}
	return out
}

// appendEnvelope appends the v2 envelope of stored event i, {event_id,
// event_type, sequence_num, source, created_at, payload}, as json.Marshal
// spells it, built without reflection since a busy stream sends one per
// event.
func (ss *session) appendEnvelope(b []byte, i uint64) []byte {
	m := ss.meta[i]
	b = append(b, `{"event_id":`...)
	b = appendString(b, ss.ids[i])
	b = append(b, `,"event_type":`...)
	b = appendString(b, m.typ)
	b = append(b, `,"sequence_num":`...)
	b = strconv.AppendUint(b, i+1, 10)
	b = append(b, `,"source":`...)
	b = appendString(b, m.source)
	b = append(b, `,"created_at":`...)
	b = appendString(b, m.createdAt)
	b = append(b, `,"payload":`...)
	if len(ss.events[i]) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, ss.events[i]...) // stored compact by store
	}
	return append(b, '}')
}

// appendString appends s as a JSON string as json.Marshal spells it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// resumeFrom is the last sequence number the client already has: the
// from_sequence_num query, else the Last-Event-ID header, else 0. Both are
// exclusive, so a client resumes with the last number it saw; the query wins
// because it is the explicit one.
func resumeFrom(r *http.Request) (uint64, error) {
	v, name := r.URL.Query().Get("from_sequence_num"), "from_sequence_num"
	if v == "" {
		v, name = r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s must be a non-negative integer", name)
	}
	return n, nil
}

// streamEvents serves /v1/code/sessions/{id}/events/stream: every stored
// event after the resume point, then new ones as they are stored, each as
// "id: <seq>" and "data: <envelope>", with a ": ping" comment every
// PingInterval. A script may slow it (Delay between events), end it after
// After events (Close cleanly, Drop cut off) or Stall it.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	from, err := resumeFrom(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	st := &stream{wake: make(chan struct{}, 1), kill: make(chan closeReq, 1)}
	s.mu.Lock()
	ss, ok := s.sessions[r.PathValue("id")]
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "not_found_error", "session not found")
		return
	}
	ss.streams[st] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(ss.streams, st)
		s.mu.Unlock()
	}()
	fail := s.takeFail(r, phaseStream)

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	// cut ends the response as a lost connection looks: what was written
	// goes out, then no final chunk. net/http recovers ErrAbortHandler quietly.
	cut := func() {
		rc.Flush()
		panic(http.ErrAbortHandler)
	}
	// wait blocks for d; false (having cut the stream if asked to) when the
	// stream must end instead.
	wait := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-r.Context().Done():
		case <-s.ctx.Done():
		case k := <-st.kill:
			if k.code == 0 {
				cut()
			}
		}
		return false
	}
	sent := 0
	// ended applies an ending script once After events are out: true when
	// the handler must return.
	ended := func() bool {
		if fail == nil || !fail.ends() || sent < fail.After {
			return false
		}
		switch {
		case fail.Drop:
			cut()
		case fail.Stall:
			// Nothing more, not even pings, until someone hangs up.
			rc.Flush()
			wait(nil)
		}
		return true
	}
	// pace waits Delay between two events.
	pace := func() bool {
		if fail == nil || fail.Delay <= 0 || sent == 0 {
			return true
		}
		rc.Flush()
		ch, t := clock.After(s.clock, fail.Delay)
		defer t.Stop()
		return wait(ch)
	}
	tick := newTicker(s.clock, s.opts.PingInterval)
	defer tick.Stop()
	var buf []byte
	for {
		s.mu.Lock()
		n := uint64(len(ss.events))
		batch := ss.envelopes(min(from, n), min(n, from+sseBatch))
		more := from+sseBatch < n
		s.mu.Unlock()
		for _, b := range batch {
			if ended() || !pace() {
				return
			}
			from++
			buf = append(buf[:0], "id: "...)
			buf = strconv.AppendUint(buf, from, 10)
			buf = append(buf, "\ndata: "...)
			buf = append(buf, b...)
			buf = append(buf, "\n\n"...)
			if _, err := w.Write(buf); err != nil {
				return
			}
			sent++
		}
		if rc.Flush() != nil || ended() {
			return
		}
		if more {
			continue
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		case k := <-st.kill:
			if k.code == 0 {
				cut()
			}
			return
		case <-st.wake:
		case <-tick.C():
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
		}
	}
}
