package remotews

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
)

// Transport is the live channel a Stream uses.
type Transport string

const (
	// TransportWS is the claude.ai web app's subscribe WebSocket (seed 001).
	TransportWS Transport = "ws"
	// TransportSSE is the v2 event stream today's CLI uses (INTEROP.md).
	TransportSSE Transport = "sse"
)

// Defaults, from seed 001's connection lifecycle unless noted.
const (
	DefaultOpenTimeout  = 5 * time.Second
	DefaultKeepAlive    = 50 * time.Second
	DefaultStallTimeout = 90 * time.Second // ours: almost two missed keep-alives
	DefaultIdleTimeout  = 5 * time.Minute
	DefaultDormantPoll  = 60 * time.Second // ours
	DefaultMaxRetries   = 5
	DefaultDedupWindow  = 8192 // ours
)

// frameQueue bounds the frames read but not yet delivered. When it is full
// the reader stops reading, so a slow consumer backs up into the socket and,
// on the WebSocket, the server sheds us with 1008; replay and recovery then
// make up for it. It only decouples reading from delivering, and every idle
// stream holds one, so it is short.
const frameQueue = 32

// History is the REST the stream needs for gap recovery; *sessionsapi.Client implements it.
type History interface {
	// EventsAfter returns one page of the session's events after afterID (exclusive; "" = from
	// the start), oldest first (GET /v1/sessions/{id}/events?after_id=).
	EventsAfter(ctx context.Context, sessionID, afterID string) (events []json.RawMessage, more bool, err error)
	// CodeEventsAfter returns one page of v2 envelopes with sequence_num > after, oldest first
	// (GET /v1/code/sessions/{id}/events?from_sequence_num=after).
	CodeEventsAfter(ctx context.Context, sessionID string, after uint64) (events []json.RawMessage, more bool, err error)
}

// Config configures a Stream. NewConfig fills in the defaults; NewStream
// fills zero durations and counts too, but not Initialize.
type Config struct {
	BaseURL   string // http(s)://host[:port]; the WebSocket URL is derived (ws/wss)
	OrgUUID   string // required on the WebSocket (its organization_uuid query)
	SessionID string
	Transport Transport // default ws
	// Header returns the headers of one dial: credentials, anthropic-*,
	// traceparent. It is called before every attempt; nil sends none.
	Header func(ctx context.Context) (http.Header, error)
	// HTTPClient dials both transports. Its Timeout is ignored (a stream is
	// open for hours); OpenTimeout bounds the opening instead.
	HTTPClient *http.Client
	History    History // nil: no gap recovery

	// ResumeAfterID (WebSocket) and ResumeAfterSeq (SSE) are the last event
	// the caller already has. Without one the stream starts from the start
	// of the session: with History, the whole history is delivered first.
	ResumeAfterID  string
	ResumeAfterSeq uint64
	// Seen are the uuids of events the caller already has, oldest first
	// (the newest DedupWindow are kept). Given with ResumeAfterID, they fill
	// the de-dup window against the server's replay, so the stream need not
	// read History up to the resume point for that.
	Seen []string

	OpenTimeout time.Duration // 5 s: connection failed if not open by then
	// KeepAlive is how often the client sends {"type":"keep_alive"} on the
	// WebSocket; 50 s by default, < 0 never.
	KeepAlive time.Duration
	// StallTimeout: no frame at all (keep_alive and ": ping" included) for
	// this long while waiting for one means the connection is dead; the
	// stream reconnects. 90 s by default, < 0 never.
	StallTimeout time.Duration
	// IdleTimeout is seed 001's idle disconnect: no message (keep-alives
	// excluded) for this long closes the connection and the stream goes
	// dormant. 5 min by default, < 0 never.
	IdleTimeout time.Duration
	// DormantPoll is how often a dormant stream asks History whether there
	// are new events, reconnecting when there are; 60 s by default, < 0
	// never (only Wake ends dormancy then, as it does without History).
	DormantPoll time.Duration
	// MaxRetries is how many consecutive failed attempts end Run with a
	// *GiveUpError (default 5, as the seed); < 0 retries for ever. An
	// attempt fails when it does not open or ends before any frame but the
	// answer to our initialize arrived.
	MaxRetries int
	// Backoff is the wait before the next attempt after n consecutive
	// failures (n is 0 after a healthy connection dropped). DefaultBackoff
	// when nil. A 429's Retry-After and the SSE retry: field are floors.
	Backoff func(attempt int) time.Duration
	// Initialize sends {"request_id":..,"type":"control_request","request":
	// {"subtype":"initialize"}} after every WebSocket open, as the web app
	// does. The answer's pending_permission_requests are delivered as
	// can_use_tool control_request Updates with SourcePending.
	Initialize  bool
	DedupWindow int // uuids and request ids remembered for de-duplication (default 8192)
	Clock       clock.Clock
	Logger      *slog.Logger
}

// NewConfig returns a Config for one session with every default set,
// Initialize included.
func NewConfig(baseURL, orgUUID, sessionID string) Config {
	return Config{
		BaseURL: baseURL, OrgUUID: orgUUID, SessionID: sessionID,
		Transport:   TransportWS,
		OpenTimeout: DefaultOpenTimeout, KeepAlive: DefaultKeepAlive,
		StallTimeout: DefaultStallTimeout, IdleTimeout: DefaultIdleTimeout,
		DormantPoll: DefaultDormantPoll, MaxRetries: DefaultMaxRetries,
		Backoff: DefaultBackoff, Initialize: true, DedupWindow: DefaultDedupWindow,
	}
}

// ErrConfig is wrapped by NewStream's errors.
var ErrConfig = errors.New("remotews: invalid stream config")

// ErrRunning is returned by Run while another Run of the same Stream is active.
var ErrRunning = errors.New("remotews: stream is already running")

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
	Message Message // decoded wire message (for SSE: DecodeV2 payload decoded); Raw kept
	Seq     uint64  // v2 sequence number (0 on the WebSocket)
	EventID string  // uuid / event_id
	Source  Source
}

// LinkState is where a stream's connection stands.
type LinkState uint8

const (
	LinkConnected    LinkState = iota + 1 // open and reading
	LinkReconnecting                      // lost or failed; waiting Link.Delay before the next attempt
	LinkDormant                           // closed after IdleTimeout; waiting for Wake or new events
	LinkGaveUp                            // Run is returning its error (Link.Err)
)

// linkWire spells states as message.Link does.
var linkWire = [...]string{
	LinkConnected: "connected", LinkReconnecting: "reconnecting", LinkDormant: "dormant", LinkGaveUp: "gave_up",
}

func (s LinkState) String() string {
	if int(s) >= len(linkWire) || linkWire[s] == "" {
		return fmt.Sprintf("LinkState(%d)", uint8(s))
	}
	return linkWire[s]
}

// Link reports a change of connection state to Run's onLink.
type Link struct {
	State LinkState
	// Attempt counts consecutive failed attempts so far: 0 once connected
	// or after a healthy connection dropped.
	Attempt int
	Err     error         // why the last connection ended or failed; nil when connected
	Delay   time.Duration // Reconnecting: the wait before the next attempt
}

// StreamStats are counters of one Stream since NewStream.
type StreamStats struct {
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
	log     *slog.Logger
	http    *http.Client
	wake    chan struct{} // buffered 1
	running atomic.Bool
	frames  atomic.Uint64 // StreamStats.Frames, counted off the Run goroutine

	// Owned by the Run goroutine.
	win     *window
	lastID  string // last uuid delivered or recovered (WebSocket)
	histID  string // last uuid History itself returned
	lastSeq uint64 // last sequence number delivered (SSE)
	opened  bool   // a connection has been open before
	primeTo string // WebSocket resume point not yet found in History

	mu    sync.Mutex
	stats StreamStats
}

// NewStream validates cfg and fills its defaults.
func NewStream(cfg Config) (*Stream, error) {
	if err := validate(&cfg); err != nil {
		return nil, err
	}
	hc := *cfg.HTTPClient
	hc.Timeout = 0
	s := &Stream{
		cfg: cfg, clock: cfg.Clock, log: cfg.Logger.With("session", cfg.SessionID, "transport", string(cfg.Transport)),
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

func validate(c *Config) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("BaseURL %q is not an http(s)://host URL", c.BaseURL)
	}
	if c.SessionID == "" {
		return bad("SessionID is empty")
	}
	if c.Transport == "" {
		c.Transport = TransportWS
	}
	switch c.Transport {
	case TransportWS:
		if c.OrgUUID == "" {
			return bad("OrgUUID is required on the WebSocket")
		}
	case TransportSSE:
	default:
		return bad("Transport %q is neither %q nor %q", c.Transport, TransportWS, TransportSSE)
	}
	if c.OpenTimeout < 0 || c.DedupWindow < 0 {
		return bad("OpenTimeout and DedupWindow cannot be negative")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.OpenTimeout, DefaultOpenTimeout)
	def(&c.KeepAlive, DefaultKeepAlive)
	def(&c.StallTimeout, DefaultStallTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.DormantPoll, DefaultDormantPoll)
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.DedupWindow == 0 {
		c.DedupWindow = DefaultDedupWindow
	}
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
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
func (s *Stream) Stats() StreamStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Frames = s.frames.Load()
	return st
}

func (s *Stream) count(f func(*StreamStats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

// Run connects and keeps the session live until ctx ends (returns nil then)
// or it gives up: a *GiveUpError after MaxRetries consecutive failed
// attempts, a *PermanentError at once for 400/401/403/404 on the dial or
// WebSocket close codes 1002/4001/4003. Updates go to out with a blocking
// send: backpressure is the full policy (a slow consumer makes the server
// shed us with 1008, after which replay and recovery lose nothing). onLink,
// if not nil, is called on the Run goroutine at every state change. Every
// goroutine Run starts has stopped when it returns.
func (s *Stream) Run(ctx context.Context, out chan<- Update, onLink func(Link)) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer s.running.Store(false)
	if onLink == nil {
		onLink = func(Link) {}
	}
	failures := 0
	for {
		res := s.session(ctx, out, onLink)
		s.drainWake()
		if ctx.Err() != nil {
			return nil
		}
		if res.idle {
			failures = 0
			if !s.dormant(ctx, func() { onLink(Link{State: LinkDormant}) }) {
				return nil
			}
			continue
		}
		ce := res.err
		if ce.permanent() {
			err := &PermanentError{SessionID: s.cfg.SessionID, Err: ce}
			onLink(Link{State: LinkGaveUp, Attempt: failures + 1, Err: err})
			return err
		}
		if res.framed {
			failures = 0
		} else {
			failures++
		}
		if s.cfg.MaxRetries > 0 && failures >= s.cfg.MaxRetries {
			err := &GiveUpError{SessionID: s.cfg.SessionID, Attempts: failures, Last: ce}
			onLink(Link{State: LinkGaveUp, Attempt: failures, Err: err})
			return err
		}
		wait := max(s.cfg.Backoff(failures), ce.RetryAfter, res.retryFloor)
		s.log.Info("remote stream lost", "err", ce, "attempt", failures, "retry_in", wait)
		l := Link{State: LinkReconnecting, Attempt: failures, Err: ce, Delay: wait}
		if wait <= 0 {
			onLink(l)
			continue
		}
		// onLink runs once the wait is armed, so that a test clock advanced
		// from it finds the timer.
		if !s.sleep(ctx, wait, func() { onLink(l) }) {
			return nil
		}
	}
}

// sleep waits d on the clock, or until Wake; it reports false when ctx
// ended first. armed, if not nil, runs once the timer is set.
func (s *Stream) sleep(ctx context.Context, d time.Duration, armed func()) bool {
	fired := make(chan struct{})
	t := s.clock.AfterFunc(d, func() { close(fired) })
	defer t.Stop()
	if armed != nil {
		armed()
	}
	select {
	case <-ctx.Done():
		return false
	case <-s.wake:
		return true
	case <-fired:
		return true
	}
}

// dormant waits for Wake, or for History to show events we have not seen,
// polling every DormantPoll. It reports false when ctx ended first.
func (s *Stream) dormant(ctx context.Context, notify func()) bool {
	poll := s.cfg.DormantPoll > 0 && s.cfg.History != nil
	for {
		if !poll {
			notify()
			select {
			case <-ctx.Done():
				return false
			case <-s.wake:
				return true
			}
		}
		fired := make(chan struct{})
		t := s.clock.AfterFunc(s.cfg.DormantPoll, func() { close(fired) })
		notify()
		notify = func() {}
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-s.wake:
			t.Stop()
			return true
		case <-fired:
		}
		news, err := s.hasNew(ctx)
		if err != nil {
			s.log.Debug("dormant poll failed", "err", err)
		}
		if news {
			return true
		}
	}
}

// hasNew reports whether History holds an event the stream has not delivered.
func (s *Stream) hasNew(ctx context.Context) (bool, error) {
	if s.cfg.Transport == TransportSSE {
		evs, _, err := s.cfg.History.CodeEventsAfter(ctx, s.cfg.SessionID, s.lastSeq)
		if err != nil {
			return false, err
		}
		for _, raw := range evs {
			if seq, ok := rawSeq(raw); ok && seq > s.lastSeq {
				return true, nil
			}
		}
		return false, nil
	}
	evs, _, err := s.cfg.History.EventsAfter(ctx, s.cfg.SessionID, s.lastID)
	if err != nil && s.lastID != s.histID {
		// History may not know a live-only event; ask from the last one it gave.
		evs, _, err = s.cfg.History.EventsAfter(ctx, s.cfg.SessionID, s.histID)
	}
	if err != nil {
		return false, err
	}
	for _, raw := range evs {
		if id := rawUUID(raw); id == "" || !s.win.has(id) {
			return true, nil
		}
	}
	return false, nil
}
