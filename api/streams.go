package api

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// StreamStall is how long one write to a client on a long route (an event
// stream, a ?wait or "wait": true answer) may take: a client that stops
// reading fails the write and frees its handler and connection, instead
// of holding them forever. Config.StreamStall overrides it (tests).
const StreamStall = 10 * time.Second

// MaxStreams caps the event streams and waits (GET /v1/events, ?wait on a
// message, "wait": true on a send or an idle subscription) open at once,
// and MaxStreamsPerGrant one client's share of them (a token, the control
// socket, a browser session's token): one client that opens streams and
// never reads them cannot take the others' room. A request past either is
// refused with a 429 before it waits, and counted (DropStreams). The
// control socket's streams count only against its own share, never the
// total, so tokens at their limits cannot shut the local owner out.
const (
	MaxStreams         = 256
	MaxStreamsPerGrant = 32
)

// DropStreams is the reason Config.Drop counts a stream or wait refused
// past MaxStreams or MaxStreamsPerGrant.
const DropStreams = "streams-open"

// streamGate counts the streams and waits open, in all and by grant.
type streamGate struct {
	max, share int
	mu         sync.Mutex
	open       int
	held       map[string]int
}

func newStreamGate(max, share int) *streamGate {
	return &streamGate{max: max, share: share, held: map[string]int{}}
}

// take holds a slot for grant's stream until the returned func is called;
// why says which cap refused it.
func (g *streamGate) take(grant string) (release func(), why string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	counted := grant != socketOwner
	switch {
	case g.held[grant] >= g.share:
		return nil, fmt.Sprintf("this client has %d event streams and waits open", g.share)
	case counted && g.open >= g.max:
		return nil, fmt.Sprintf("%d event streams and waits are open", g.max)
	}
	if counted {
		g.open++
	}
	g.held[grant]++
	return sync.OnceFunc(func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if counted {
			g.open--
		}
		if g.held[grant]--; g.held[grant] <= 0 {
			delete(g.held, grant)
		}
	}), ""
}

// holdStream takes a stream slot for r's grant, or answers 429 and
// returns false.
func (s *Server) holdStream(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	g, _ := GrantFrom(r.Context())
	release, why := s.streams.take(g.ID)
	if why != "" {
		s.cfg.Drop(DropStreams)
		w.Header().Set("Retry-After", "5")
		writeError(w, Error{Error: "too many requests: " + why + "; close one or retry in 5s", Code: CodeRateLimited, RetryAfter: 5})
		return nil, false
	}
	return release, true
}

// StreamWriter lifts the connection's deadlines from w for a long route (an
// event stream, a wait) and returns it bounded another way:
// each write and flush has stall to go out. The MCP server's streams use it
// too.
func StreamWriter(w http.ResponseWriter, stall time.Duration) http.ResponseWriter {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{}) // unsupported by test recorders: nothing to lift there
	_ = rc.SetWriteDeadline(time.Time{})
	return &stallWriter{ResponseWriter: w, rc: rc, stall: stall}
}

// stallWriter gives each write and flush on a long route its own deadline
// (the connection's were lifted for the wait): a client that stops
// reading fails the write within stall.
type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
}

func (w *stallWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.stall))
	return w.ResponseWriter.Write(p)
}

func (w *stallWriter) FlushError() error {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.stall))
	return w.rc.Flush()
}

func (w *stallWriter) Flush() { _ = w.FlushError() }

func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
