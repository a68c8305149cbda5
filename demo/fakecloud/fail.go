package fakecloud

import (
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// FailSpec scripts failures for the next Times requests that match Method
// and Path: an HTTP status (with or without a Delay first), a Delay alone,
// or the end of a stream (Close, Drop or Stall, each with or without a
// Delay between frames).
type FailSpec struct {
	Method string // "" matches any method
	// Path matches when it is a prefix of the request path; "" matches all.
	Path  string
	Times int // default 1

	// Status answers the request with this HTTP status (401, 403, 429, 5xx)
	// before any other check. RetryAfter, if set, is sent as Retry-After in
	// whole seconds, rounded up.
	Status     int
	RetryAfter time.Duration
	// Location, with a 3xx Status, is where the answer redirects.
	Location string

	// Close accepts the subscribe WebSocket and then closes it with this code
	// (1002, 4001, 4003, ...) after After frames were sent. Drop does the
	// same without a close frame, as a lost connection looks. On the v2
	// events stream, Close ends the response cleanly after After events and
	// Drop cuts it off (no final chunk), so the client sees a broken read.
	Close websocket.StatusCode
	Drop  bool
	After int

	// Stall accepts the WebSocket or stream, delivers After frames, then
	// sends nothing at all: no events, no keep-alives, no ping comments, no
	// answer to a WebSocket Ping frame (what the client sends is read and
	// thrown away), until the client goes away or the server closes (Close,
	// Disconnect). Events stored meanwhile are not sent on it.
	Stall bool

	// Delay, on a REST request, answers it (or its Status) after this long.
	// On a WebSocket or stream it is the wait between two frames: a slow
	// stream. A spec with only a Delay applies to whichever matching
	// request comes first, REST or stream.
	Delay time.Duration
}

// ends says the spec ends or stalls a stream.
func (f *FailSpec) ends() bool { return f.Close != 0 || f.Drop || f.Stall }

// failPhase is when a request looks for a failure script.
type failPhase uint8

const (
	// phaseRequest: before any check. Statuses apply to every request;
	// delays alone to REST requests.
	phaseRequest failPhase = iota + 1
	// phaseStream: a WebSocket or stream being accepted, after the checks.
	phaseStream
)

// appliesTo says whether f is for request r in phase p.
func (f *FailSpec) appliesTo(r *http.Request, p failPhase) bool {
	if p == phaseStream {
		return f.Status == 0
	}
	return f.Status != 0 || !isStream(r) && f.Delay > 0 && !f.ends()
}

// Fail queues a failure script. Specs are tried in the order they were added.
func (s *Server) Fail(f FailSpec) {
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails = append(s.fails, &f)
}

// PendingFails is how many uses of failure scripts no request has taken yet.
func (s *Server) PendingFails() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.fails {
		n += f.Times
	}
	return n
}

// takeFail consumes one use of the first spec for r in phase p.
func (s *Server) takeFail(r *http.Request, p failPhase) *FailSpec {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.fails {
		if !f.appliesTo(r, p) || (f.Method != "" && f.Method != r.Method) || !strings.HasPrefix(r.URL.Path, f.Path) {
			continue
		}
		f.Times--
		if f.Times == 0 {
			s.fails = append(s.fails[:i], s.fails[i+1:]...)
		}
		c := *f
		return &c
	}
	return nil
}
