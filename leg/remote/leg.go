package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

// API is the REST surface the remote leg uses. NewSessionsAPI adapts
// *sessionsapi.Client to it, picking the v1 (/v1/sessions) or v2
// (/v1/code/sessions) paths to match the live transport.
type API interface {
	stream.History
	// ListSessions lists the account's remote sessions.
	ListSessions(ctx context.Context) ([]RemoteSession, error)
	// Post posts events to a session. Every event carries a uuid that stays
	// the same across retries, so the server can drop a repeat.
	Post(ctx context.Context, sessionID string, events ...json.RawMessage) error
	// StreamHeader gives the headers of a WebSocket dial or SSE request.
	StreamHeader(ctx context.Context) (http.Header, error)
}

// RemoteSession is a remote session as the REST list shows it.
type RemoteSession struct {
	ID      string
	Title   string
	Status  string // active, idle, archived
	Created time.Time
}

// ReplyMode is what of a remote answer a local sender gets.
type ReplyMode string

const (
	ReplyResult    ReplyMode = "result"
	ReplyAssistant ReplyMode = "assistant"
)

// FollowAll follows every session the account lists.
const FollowAll = "all"

// LegConfig configures the remote leg.
type LegConfig struct {
	API     API
	BaseURL string
	OrgUUID string
	// Transport is the live transport of every followed session.
	Transport stream.Transport
	// Follow lists the session ids kept live, or FollowAll.
	Follow []string
	// Aliases fixes the alias name of sessions by id (serve
	// --remote-alias ID=NAME); others get one derived from their title.
	Aliases map[string]string
	// Reply says what of a remote session's answer goes back to a local
	// sender: ReplyResult (default) its turn's final result text,
	// ReplyAssistant each finished assistant message as it streams.
	Reply ReplyMode
	// Tune adjusts each session's stream config (timeouts, backoff) after
	// the leg filled it from NewConfig.
	Tune func(*stream.Config)
	// ListInterval is how often the session list is refreshed (and, with
	// FollowAll, new sessions followed); default 30 s.
	ListInterval time.Duration
	// ListTimeout bounds one listing of the sessions; default
	// DefaultListTimeout.
	ListTimeout time.Duration
	// ListWait bounds how long Sessions waits for a listing when the leg
	// has none yet; default DefaultListWait. Once it has one, Sessions
	// answers from it at once and never waits on the API.
	ListWait time.Duration
	// ControlTimeout bounds the wait for a session's answer to a control
	// request (interrupt, set_model, set_permission_mode); default
	// DefaultControlTimeout.
	ControlTimeout time.Duration
	// MaxFollowed caps the sessions followed at once; default
	// DefaultMaxFollowed. Past it, a new session is not followed: counted
	// and logged.
	MaxFollowed int
	Logger      *slog.Logger
	Now         func() time.Time
}

// Leg is the claude.ai remote leg: it keeps the followed sessions live,
// turns what they say into events (remote output, permission prompts,
// link state), posts messages and permission answers over REST.
type Leg struct {
	cfg LegConfig
	log *slog.Logger

	// listCtx bounds the listings started by Sessions and Run; Run cancels
	// it when it returns.
	listCtx     context.Context
	stopListing context.CancelFunc

	mu       sync.Mutex
	listed   []RemoteSession // the last good listing
	listedAt time.Time
	listErr  error              // the last listing's failure; nil once one works
	listing  chan struct{}      // closed when the listing under way ends; nil when none is
	listFrom time.Time          // when the first listing started
	links    map[string]*follow // followed session id -> its stream
	// parked are the follows of sessions gone from the listing, whose
	// goroutines were stopped, kept so that a session that comes back
	// resumes where its stream stopped; the oldest go past maxParked.
	parked *bounded.Map[string, *follow]
	names  map[string]string // session id -> alias name, from the last listing

	posted *bounded.Map[string, postedMsg] // event uuid we posted -> what it carried, until echoed
	// unechoed are the uuids of posts with a local sender to answer, by
	// session, accepted and not yet echoed: the next turn answers them.
	unechoed map[string][]unechoed
	// waiters wait for the answers to our control requests, by request id.
	waiters map[string]chan *wire.ControlResponse
	// created are the sessions the leg created, oldest first: followed
	// like those named in Follow, until archived.
	created []string
	// relist asks Run to list (and follow) afresh now.
	relist chan struct{}
	// opening holds a token for each session reading its history and
	// opening its stream: a gateway following thousands starts them a
	// batch at a time, which spares the cloud a stampede and keeps the
	// start-up's garbage (and so the heap the process keeps) small.
	opening chan struct{}
	// refused counts the sessions not followed past MaxFollowed, each time
	// a listing found them; refusing says the last listing refused some.
	refused  uint64
	refusing bool
}

// maxOpening is how many followed sessions open at once.
const maxOpening = 64

const (
	maxPosted  = 4096
	maxWaiting = 64 // local senders waiting for one remote session's answer
	maxParked  = 1024
)

// Defaults of the listing's bounds. A cloud that does not answer must not
// hold up local routing: the router lists every leg to resolve a name, so
// the remote leg answers from its last good listing, and waits at most
// DefaultListWait for its very first one.
const (
	DefaultListTimeout = 15 * time.Second
	DefaultListWait    = 250 * time.Millisecond
	// DefaultControlTimeout is how long a control request waits for the
	// session's answer.
	DefaultControlTimeout = 10 * time.Second
	// DefaultMaxFollowed bounds the followed set (each a goroutine and its
	// stream), well above the 10,000 idle sessions the gateway is measured
	// with, and the most one listing holds (sessionsapi.MaxListItems).
	DefaultMaxFollowed = 20000
)

// NewLeg checks cfg and builds the leg; Run starts following.
func NewLeg(cfg LegConfig) (*Leg, error) {
	if cfg.API == nil {
		return nil, errors.New("remote leg: no API client")
	}
	if cfg.BaseURL == "" {
		return nil, errors.New("remote leg: no base URL")
	}
	switch cfg.Transport {
	case "":
		cfg.Transport = stream.TransportWS
	case stream.TransportWS, stream.TransportSSE:
	default:
		return nil, fmt.Errorf("remote leg: unknown transport %q (want ws or sse)", cfg.Transport)
	}
	for _, id := range cfg.Follow {
		if id != FollowAll && !ValidSessionID(id) {
			return nil, fmt.Errorf("remote leg: %q is not a session id", id)
		}
	}
	if cfg.ListInterval <= 0 {
		cfg.ListInterval = 30 * time.Second
	}
	if cfg.ListTimeout <= 0 {
		cfg.ListTimeout = DefaultListTimeout
	}
	if cfg.ListWait <= 0 {
		cfg.ListWait = DefaultListWait
	}
	if cfg.ControlTimeout <= 0 {
		cfg.ControlTimeout = DefaultControlTimeout
	}
	if cfg.MaxFollowed <= 0 {
		cfg.MaxFollowed = DefaultMaxFollowed
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch cfg.Reply {
	case "":
		cfg.Reply = ReplyResult
	case ReplyResult, ReplyAssistant:
	default:
		return nil, fmt.Errorf("remote leg: reply mode %q (want result or assistant)", cfg.Reply)
	}
	for id, name := range cfg.Aliases {
		if !ValidSessionID(id) || !validAliasName(name) {
			return nil, fmt.Errorf("remote leg: alias %s=%s: want SESSION_ID=NAME with a name of letters, digits, '-', '_' or '.'", id, name)
		}
	}
	l := &Leg{cfg: cfg, log: cfg.Logger, links: map[string]*follow{}, parked: bounded.NewMap[string, *follow](maxParked), posted: bounded.NewMap[string, postedMsg](maxPosted), names: map[string]string{},
		unechoed: map[string][]unechoed{}, waiters: map[string]chan *wire.ControlResponse{}, relist: make(chan struct{}, 1),
		opening: make(chan struct{}, maxOpening)}
	l.listCtx, l.stopListing = context.WithCancel(context.Background())
	return l, nil
}

// ValidSessionID accepts what may stand for a session id in a URL path
// segment: letters, digits, '_' and '-', at most 200 of them.
func ValidSessionID(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for _, r := range id {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// Name is the leg's protocol.
func (l *Leg) Name() message.Protocol { return message.ProtocolRemote }

// Claims takes every bridge: address, listed or not: posting to a session
// needs no subscription.
func (l *Leg) Claims(a addressing.Address) bool {
	return a.Kind == addressing.KindBridge && ValidSessionID(a.ID)
}

// longWait is a wait before reconnecting that Ready reports: longer than
// the backoff's own (about four minutes at most), so only a server asking
// for a long pause (Retry-After, retry:) makes one.
const longWait = 5 * time.Minute

// Ready says whether the session list could be fetched and whether any
// followed session's stream gave up or waits long to reconnect: its
// prompts go unseen meanwhile.
func (l *Leg) Ready() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.listErr != nil {
		return l.listErr
	}
	if l.listedAt.IsZero() {
		return errors.New("session list not fetched yet")
	}
	var gaveUp, waiting []string
	for id, f := range l.links {
		switch {
		case f.link.State == stream.LinkGaveUp:
			gaveUp = append(gaveUp, id)
		case f.link.State == stream.LinkReconnecting && f.link.Delay > longWait:
			waiting = append(waiting, fmt.Sprintf("%s (%v)", id, f.link.Delay))
		}
	}
	var why []string
	if len(gaveUp) > 0 {
		slices.Sort(gaveUp)
		why = append(why, "live stream gave up for "+strings.Join(gaveUp, ", "))
	}
	if len(waiting) > 0 {
		slices.Sort(waiting)
		why = append(why, "live stream waits long to reconnect for "+strings.Join(waiting, ", "))
	}
	if len(why) > 0 {
		return errors.New(strings.Join(why, "; "))
	}
	return nil
}

// Wake leaves dormancy for a followed session, as when a message is sent
// to it.
func (l *Leg) Wake(id string) {
	l.mu.Lock()
	f, ok := l.links[id]
	var st *stream.Stream
	if ok {
		st = f.stream
	}
	l.mu.Unlock()
	if st != nil {
		st.Wake()
	}
}
