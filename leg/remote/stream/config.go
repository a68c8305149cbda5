package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
)

// Transport is the live channel a Stream uses.
type Transport string

const (
	// TransportWS is the claude.ai web app's subscribe WebSocket
	// (docs/protocols/claude-ai-remote.md#two-transports).
	TransportWS Transport = "ws"
	// TransportSSE is the v2 event stream today's CLI uses.
	TransportSSE Transport = "sse"
)

// Defaults, from the web app's connection lifecycle unless noted
// (docs/protocols/claude-ai-remote.md#connection-lifecycle).
const (
	DefaultOpenTimeout  = 5 * time.Second
	DefaultKeepAlive    = 50 * time.Second
	DefaultStallTimeout = 90 * time.Second // ours: almost two missed keep-alives
	DefaultIdleTimeout  = 5 * time.Minute
	DefaultDormantPoll  = 60 * time.Second // ours
	DefaultMaxRetries   = 5
	DefaultDedupWindow  = 8192 // ours
)

// History is the REST the stream needs for gap recovery; *sessionsapi.Client implements it.
type History interface {
	// EventsAfter returns one page of the session's events after afterID (exclusive; "" = from
	// the start), oldest first (GET /v1/sessions/{id}/events?after_id=).
	EventsAfter(ctx context.Context, sessionID, afterID string) (events []json.RawMessage, more bool, err error)
	// CodeEventsAfter returns one page of v2 envelopes with sequence_num > after, oldest first
	// (GET /v1/code/sessions/{id}/events?from_sequence_num=after).
	CodeEventsAfter(ctx context.Context, sessionID string, after uint64) (events []json.RawMessage, more bool, err error)
}

// Config configures a Stream. NewConfig fills in the defaults; New
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
	// open for hours); OpenTimeout bounds the opening instead. nil: the
	// default transport's settings with small connection buffers.
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
	// IdleTimeout is the web app's idle disconnect: no message (keep-alives
	// excluded) for this long closes the connection and the stream goes
	// dormant. 5 min by default, < 0 never.
	IdleTimeout time.Duration
	// DormantPoll is how often a dormant stream asks History whether there
	// are new events, reconnecting when there are; 60 s by default, < 0
	// never (only Wake ends dormancy then, as it does without History).
	DormantPoll time.Duration
	// MaxRetries is how many consecutive failed attempts end Run with a
	// *GiveUpError (default 5, as the web app); < 0 retries for ever. An
	// attempt fails when it does not open or ends before any message
	// arrived: keep-alives, pings, frames that do not decode and the answer
	// to our initialize are not messages, unless they kept the connection
	// up for a minute.
	MaxRetries int
	// Backoff spaces the attempts (see DefaultBackoff, the zero value's);
	// its MaxRetries and MaxElapsed play no part: MaxRetries above says
	// when to give up. A 429's Retry-After and the SSE retry: field are
	// floors.
	Backoff clock.Backoff
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
	if c.Backoff == (clock.Backoff{}) {
		c.Backoff = DefaultBackoff
	}
	c.Backoff.MaxRetries, c.Backoff.MaxElapsed = 0, 0
	if c.HTTPClient == nil {
		c.HTTPClient = streamClient
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// streamClient dials streams when Config names no HTTPClient: the default
// transport's settings (proxy, TLS, HTTP/2), with small buffers, since each
// open stream holds its connection's for hours and the readers above it
// buffer again.
var streamClient = &http.Client{Transport: streamTransport()}

func streamTransport() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.ReadBufferSize, t.WriteBufferSize = connBuf, connBuf
	// A stream's connection is its own for hours; none is worth keeping
	// idle once its stream ended.
	t.DisableKeepAlives = true
	return t
}

// connBuf is the read and write buffer of a stream's connection.
const connBuf = 1 << 10
