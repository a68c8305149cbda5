package stream

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("stream: invalid config")

// ErrRunning is returned by Run while another Run of the same Stream is active.
var ErrRunning = errors.New("stream: already running")

// Source says how an Update reached us.
type Source uint8

const (
	SourceLive Source = iota // read from the live connection
	// SourceReplay: sent on a replay=true WebSocket before the answer to our
	// initialize, which the server sends after what it replays.
	SourceReplay
	SourceRecovered // fetched from History to fill a gap
	SourcePending   // a prompt listed in initialize's pending_permission_requests
)

var sourceWire = [...]string{
	SourceLive: "live", SourceReplay: "replay", SourceRecovered: "recovered", SourcePending: "pending",
}

func (s Source) String() string {
	if int(s) >= len(sourceWire) {
		return fmt.Sprintf("Source(%d)", uint8(s))
	}
	return sourceWire[s]
}

// Update is one message delivered by a Stream.
type Update struct {
	Message wire.Message // decoded wire message (for SSE: the DecodeV2 payload); Raw kept
	Seq     uint64       // v2 sequence number (0 on the WebSocket)
	EventID string       // uuid / event_id
	Source  Source
}

// LinkState is where a stream's connection stands: message.LinkState, so
// a state reaches message.Link as it is, spelled in one table.
type LinkState = message.LinkState

const (
	LinkConnected    = message.LinkConnected    // open and reading
	LinkReconnecting = message.LinkReconnecting // lost or failed; waiting Link.Delay before the next attempt
	LinkDormant      = message.LinkDormant      // closed after IdleTimeout; waiting for Wake or new events
	LinkGaveUp       = message.LinkGaveUp       // Run is returning its error (Link.Err)
)

// Link reports a change of connection state to Run's onLink.
type Link struct {
	State LinkState
	// Attempt counts consecutive failed attempts so far: 0 once connected
	// or after a healthy connection dropped.
	Attempt int
	Err     error         // why the last connection ended or failed; nil when connected
	Delay   time.Duration // Reconnecting: the wait before the next attempt
}

// Stats are counters of one Stream since New.
type Stats struct {
	Connects    uint64 // connections opened
	Reconnects  uint64 // of those, opened after an earlier one
	Duplicates  uint64 // frames not delivered because they were already
	Recovered   uint64 // events delivered from History
	Gaps        uint64 // sequence jumps (SSE) and resume points History did not know
	Malformed   uint64 // lines or events that did not decode, skipped
	Frames      uint64 // lines (WebSocket) and events (SSE) read, keep-alives, pings and undecodable ones included
	LastEventID string // uuid of the last event delivered or recovered
	LastSeq     uint64 // sequence number of the last v2 event delivered
}

// Stream keeps one remote session live: it connects, delivers what the
// session says, and reconnects with replay and gap recovery when the
// connection drops. Its methods are safe for concurrent use; Run runs once
// at a time.
type Stream struct {
	cfg     Config
	clock   clock.Clock
	http    *http.Client
	wake    chan struct{} // buffered 1
	running atomic.Bool
	frames  atomic.Uint64 // Stats.Frames, counted off the Run goroutine

	// Owned by the Run goroutine (and by History's recovery at connect,
	// which Run waits for).
	win     *window
	lastID  string // last uuid delivered or recovered (WebSocket)
	histID  string // last uuid History itself returned
	lastSeq uint64 // last sequence number delivered (SSE)
	opened  bool   // a connection has been open before
	primeTo string // WebSocket resume point not yet found in History

	mu    sync.Mutex
	stats Stats
}

// New validates cfg and fills its defaults.
func New(cfg Config) (*Stream, error) {
	if err := validate(&cfg); err != nil {
		return nil, err
	}
	hc := *cfg.HTTPClient
	hc.Timeout = 0
	// A redirect is refused, not followed: following one would carry the
	// credentials to wherever the answer points (another scheme or port
	// of the host keeps them).
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	s := &Stream{
		cfg: cfg, clock: cfg.Clock,
		http: &hc, wake: make(chan struct{}, 1),
		win: newWindow(cfg.DedupWindow), lastID: cfg.ResumeAfterID, lastSeq: cfg.ResumeAfterSeq,
	}
	for _, id := range cfg.Seen[max(0, len(cfg.Seen)-cfg.DedupWindow):] {
		s.win.add(id)
	}
	if cfg.Transport == TransportWS && cfg.History != nil && cfg.ResumeAfterID != "" && len(cfg.Seen) == 0 {
		// The server's replay may resend events from before the resume
		// point; reading History up to it first puts them in the window.
		s.primeTo, s.lastID = cfg.ResumeAfterID, ""
	}
	s.stats.LastEventID, s.stats.LastSeq = cfg.ResumeAfterID, cfg.ResumeAfterSeq
	return s, nil
}

// logger is the stream's logger, with the session and the transport:
// made for each record, which are few, rather than held by each of
// thousands of idle streams.
func (s *Stream) logger() *slog.Logger {
	return s.cfg.Logger.With("session", s.cfg.SessionID, "transport", string(s.cfg.Transport))
}

// Wake ends dormancy, or a wait before the next attempt, at once. It does
// nothing to an open connection.
func (s *Stream) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Stream) drainWake() {
	select {
	case <-s.wake:
	default:
	}
}

// Stats returns the stream's counters.
func (s *Stream) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Frames = s.frames.Load()
	return st
}

func (s *Stream) count(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}
