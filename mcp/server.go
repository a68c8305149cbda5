package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// Limits of the server.
const (
	// MaxInput caps one request (an HTTP body, a stdio line): the API's
	// body cap, so MCP takes nothing the API would refuse.
	MaxInput = api.MaxBody
	// SessionIdle ends an HTTP client's session after this long without a
	// request (and takes it out of the roster), even with its event stream
	// open; stdio clients end when their connection does.
	SessionIdle = 30 * time.Minute
	// StreamGone ends an HTTP client's session this long after its event
	// stream closed, unless it opens another or a request is under way
	// meanwhile: a live client reconnects at once (the SDKs within a
	// couple of seconds), one that vanished without DELETE leaves the
	// roster now rather than after SessionIdle.
	StreamGone = 10 * time.Second
	// Quiet ends an HTTP client's session that never held an event stream
	// after this long with no request under way: nothing else tells that
	// such a client is gone.
	Quiet = 5 * time.Minute
	// MaxNameLen caps a client's name, in characters.
	MaxNameLen = 64
	// MaxSessions caps the MCP sessions open at once, over HTTP and stdio,
	// initialized or not: one more initialize is answered
	// ErrTooManySessions (one more stdio upgrade, 503). It matches the mcp
	// leg's MaxClients (a test checks), so a session that gets this far
	// always finds room in the roster.
	MaxSessions = 256
	// MaxSessionsPerToken is one grant's share of MaxSessions (a bearer
	// token's, or the control socket's for every local `gateway mcp`):
	// a quarter, so a token that leaks or loops takes at most that many
	// and at least three other grants still find room. It is more MCP
	// clients than one person's agents open at once.
	MaxSessionsPerToken = MaxSessions / 4
	// PendingFor is how long a session may take from initialize to
	// notifications/initialized; one that stays half-open is closed, so
	// it holds a slot only this long.
	PendingFor = 30 * time.Second
	// WriteStall is how long one write to a client (an HTTP stream, a
	// `gateway mcp` bridge) may wait for it to read; past it the write
	// fails and that stream, or the bridge's session, ends.
	WriteStall = 10 * time.Second
)

// Drop reasons the server counts (Config.Drop).
const (
	DropTooManySessions = "too-many-sessions" // an initialize past MaxSessions
	DropNotInitialized  = "not-initialized"   // a session closed after PendingFor half-open
	DropTokenShare      = "token-share"       // an initialize past the grant's MaxSessionsPerToken
	DropGone            = "gone"              // an HTTP session closed after StreamGone or Quiet detached
)

// ErrTooManySessions refuses an initialize past MaxSessions.
var ErrTooManySessions = errors.New("mcp: too many MCP sessions open on this gateway")

// ErrTokenShare refuses an initialize past the grant's MaxSessionsPerToken.
var ErrTokenShare = errors.New("mcp: too many MCP sessions open with this token")

// UpgradeProtocol is the Upgrade token of the stdio bridge: `gateway mcp`
// turns its connection to the control socket into a plain stream of MCP
// lines (see Dial).
const UpgradeProtocol = "gateway-mcp"

const sessionHeader = "Mcp-Session-Id"

// Config wires a Server.
type Config struct {
	Router  *router.Router
	Leg     Leg
	Logger  *slog.Logger
	Version string
	// Drop counts a session turned away or ended by the server, by
	// reason (the Drop constants); nil counts nothing.
	Drop func(reason string)
}

// Server serves MCP on the API's listeners: Streamable HTTP at /mcp and,
// for `gateway mcp`, the same endpoint upgraded to a plain stream.
type Server struct {
	cfg        Config
	log        *slog.Logger
	http       *sdk.StreamableHTTPHandler
	bare       *sdk.Server // answers the SDK's version check for a request of an open session
	pendingFor time.Duration
	writeStall time.Duration
	streamGone time.Duration
	quiet      time.Duration

	mu       sync.Mutex
	conns    map[*conn]struct{}
	open     int              // sessions past initialize, or reserved by one under way (MaxSessions)
	perGrant map[string]int   // open by grant ID (MaxSessionsPerToken)
	owners   map[string]*conn // open HTTP sessions by id
	closed   bool
	wg       sync.WaitGroup // each client's watcher
}

// built is the server of one request, so the SDK's two asks for it (its
// version check, then the new session) get the same one.
type built struct{ srv *sdk.Server }

type builtKey struct{}

// New builds the server.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Drop == nil {
		cfg.Drop = func(string) {}
	}
	s := &Server{cfg: cfg, log: cfg.Logger, conns: map[*conn]struct{}{}, owners: map[string]*conn{}, perGrant: map[string]int{},
		pendingFor: PendingFor, writeStall: WriteStall, streamGone: StreamGone, quiet: Quiet,
		bare: sdk.NewServer(&sdk.Implementation{Name: "gateway", Version: cfg.Version}, &sdk.ServerOptions{SupportedProtocolVersions: sessionVersions})}
	s.http = sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		// A request of an open session needs a server only for the
		// SDK's version check: the cheap one, not a new client's.
		if r.Header.Get(sessionHeader) != "" {
			return s.bare
		}
		b, _ := r.Context().Value(builtKey{}).(*built)
		if b == nil {
			b = &built{}
		}
		if b.srv == nil {
			g, _ := api.GrantFrom(r.Context())
			b.srv = s.session(r.URL.Query().Get("name"), "http", g).srv
		}
		return b.srv
	}, &sdk.StreamableHTTPOptions{
		SessionTimeout: SessionIdle, Logger: cfg.Logger,
		// The API checks the Host header against its own allowlist.
		DisableLocalhostProtection: true,
	})
	return s
}

// Handler serves /mcp: the stdio bridge's upgrade, or Streamable HTTP with
// each request's body capped at MaxInput.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), UpgradeProtocol) {
			s.upgrade(w, r)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			// A declared length over the cap is refused unread; else the
			// body is read whole under the listener's read deadline, capped.
			var b []byte
			err := errTooLarge
			if r.ContentLength <= MaxInput {
				b, err = readCapped(http.MaxBytesReader(w, r.Body, MaxInput), r.ContentLength)
			}
			if err != nil {
				tooLarge(w)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		// A session belongs to the token that opened it: another token
		// (with other scopes) that learned its id cannot use it.
		g, _ := api.GrantFrom(r.Context())
		if sid := r.Header.Get(sessionHeader); sid != "" {
			s.mu.Lock()
			cn, ok := s.owners[sid]
			s.mu.Unlock()
			if ok && cn.grant.ID != g.ID {
				http.Error(w, "this MCP session was opened with another token", http.StatusForbidden)
				return
			}
			if ok && r.Method == http.MethodDelete {
				// Out of the roster now, even if closing the session
				// waits on a write to a client that does not read.
				cn.leave()
			} else if ok {
				// A session with a request under way (its event stream
				// included) is attached; one left detached too long is
				// taken for gone (StreamGone, Quiet).
				if !cn.attach() {
					http.Error(w, "this MCP session has ended: initialize a new one", http.StatusNotFound)
					return
				}
				defer cn.detach(r.Method == http.MethodGet)
			}
		} else {
			r = r.WithContext(context.WithValue(r.Context(), builtKey{}, &built{}))
		}
		// A stream of events or a long wait_for_messages outlives the
		// API's deadlines; the session's own timeouts bound it, and each
		// write must go out within WriteStall.
		s.http.ServeHTTP(api.StreamWriter(w, s.writeStall), r)
	})
}

// upgrade takes over the connection for one stdio client: newline-delimited
// MCP both ways until either side closes. It takes its session slot
// first, and is closed if it has not joined after pendingFor, so an
// upgrade that never initializes holds nothing for long.
func (s *Server) upgrade(w http.ResponseWriter, r *http.Request) {
	g, _ := api.GrantFrom(r.Context())
	// An upgrade carries no body: one declared would hold a body slot
	// for the whole session.
	if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		http.Error(w, "an upgrade to "+UpgradeProtocol+" carries no body", http.StatusBadRequest)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "this listener cannot upgrade", http.StatusInternalServerError)
		return
	}
	cn := s.session(r.URL.Query().Get("name"), "stdio", g)
	cn.channel = r.URL.Query().Get("channel") == "1"
	if err := s.reserve(cn); err != nil {
		// As the API's errors, so gateway mcp shows what to do.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(api.Error{Error: err.Error(), Code: api.CodeUnavailable})
		return
	}
	defer s.release(cn, "")
	nc, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer nc.Close()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	cn.nc = nc
	s.conns[cn] = struct{}{} // so Close ends it, initialized or not
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, cn)
		s.mu.Unlock()
		s.wg.Done()
	}()
	half := time.AfterFunc(s.pendingFor, func() {
		if _, err := cn.me(); err != nil {
			s.cfg.Drop(DropNotInitialized)
			s.log.Warn("mcp stdio connection closed: not initialized in time", "after", s.pendingFor)
			_ = nc.Close()
		}
	})
	defer half.Stop()
	_ = nc.SetDeadline(time.Time{})
	_, _ = io.WriteString(nc, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+UpgradeProtocol+"\r\n\r\n")
	out := &lockedConn{w: nc, stall: s.writeStall}
	// capLines answers an oversized line itself; the SDK's cap, a little
	// above, is never reached.
	t := &sdk.IOTransport{Reader: &capLines{r: rw.Reader, c: nc, w: out, max: MaxInput}, Writer: out, MaxLineLength: MaxInput + 64}
	ss, err := cn.srv.Connect(context.Background(), channelTransport{Transport: t, cn: cn}, nil)
	if err != nil {
		return
	}
	_ = ss.Wait()
}

// Close ends every client's session and waits for them to leave the
// roster.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.wg.Wait()
}

// conn is one MCP connection: its grant, the name it asked for, and, once
// initialized, its session in the leg's roster.
type conn struct {
	s     *Server
	grant api.Grant
	want  string
	kind  string
	srv   *sdk.Server
	nc    io.Closer // a stdio upgrade's connection, closed by close
	slot  bool      // it holds a session slot (s.mu)
	// channel: what others send is pushed into the session as channel
	// messages (`gateway mcp --channel`), not as log notifications.
	channel bool

	mu     sync.Mutex
	c      *message.Session // its session in the roster, once joined
	ss     *sdk.ServerSession
	done   chan struct{} // closed when the session ends
	watch  *watch        // resources subscribed to
	kick   chan struct{} // a message arrived: push a notification
	latest message.Message
	wire   sdk.Connection // a stdio connection, for the channel's own notifications (channel.go)

	// An HTTP session's requests under way, whether it ever held an event
	// stream, and the timer that ends it when detached (presence.go).
	inflight int
	streamed bool
	ended    bool
	gen      int
	idle     *time.Timer
}

// session builds the MCP connection of one client and its server.
func (s *Server) session(name, kind string, g api.Grant) *conn {
	cn := &conn{s: s, grant: g, want: name, kind: kind}
	var caps *sdk.ServerCapabilities
	if kind == "stdio" { // what Claude Code loads as a channel
		caps = channelCaps()
	}
	cn.srv = sdk.NewServer(&sdk.Implementation{Name: "gateway", Title: "Session gateway", Version: s.cfg.Version}, &sdk.ServerOptions{
		Instructions: instructions, Capabilities: caps,
		Logger: s.log,
		InitializedHandler: func(ctx context.Context, req *sdk.InitializedRequest) {
			cn.join(req.Session)
		},
		SubscribeHandler:   func(ctx context.Context, req *sdk.SubscribeRequest) error { return cn.subscribe(req.Params.URI) },
		UnsubscribeHandler: func(context.Context, *sdk.UnsubscribeRequest) error { return nil },
		// Each client is a session in the roster for as long as it is
		// connected: the stateless protocol (2026-07-28) has no session
		// to stand for it, so the versions offered are the ones with an
		// initialize handshake.
		SupportedProtocolVersions: sessionVersions,
	})
	cn.srv.AddReceivingMiddleware(cn.admit)
	cn.addTools()
	cn.addResources()
	return cn
}

// sessionVersions are the MCP versions with sessions, newest first.
var sessionVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// instructions tell an agent what the server is for.
const instructions = "The session gateway: reach other AI coding sessions (Claude Code, Qwen Code, claude.ai, other MCP clients, other hosts) by name. " +
	"list_sessions shows who is reachable; send_message sends; wait_for_messages reads what others sent you (you are listed under your own name); " +
	"list_permission_requests and answer_permission_request handle remote sessions' prompts."

// join puts the client in the roster under its name: the one asked for
// (--name, ?name=) or else the client's own, made unique. When the
// session ends it leaves at once.
func (cn *conn) join(ss *sdk.ServerSession) {
	name := cn.want
	if name == "" {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
			name = p.ClientInfo.Name
		}
	}
	s := cn.s
	// This runs in the session's initialized handler, and closing a
	// session waits for its handlers: a refused one is closed once this
	// returns, by a goroutine that ends with it.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		go ss.Close()
		return
	}
	c, err := s.cfg.Leg.Join(cleanName(name), cn.kind, cn.notify)
	if err != nil {
		s.mu.Unlock()
		s.log.Warn("mcp client refused", "err", err)
		go ss.Close()
		return
	}
	cn.mu.Lock()
	cn.c, cn.ss, cn.done, cn.kick = &c, ss, make(chan struct{}), make(chan struct{}, 1)
	start := cn.watch != nil && !cn.watch.started
	if start {
		cn.watch.started = true
	}
	cn.mu.Unlock()
	s.conns[cn] = struct{}{}
	s.wg.Add(2)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		cn.pushLoop(ss)
	}()
	s.log.Info("mcp client joined", "name", c.Name, "transport", cn.kind)
	if start { // subscribed before initialized
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			cn.watchLoop()
		}()
	}
	go func() {
		defer s.wg.Done()
		_ = ss.Wait()
		close(cn.done)
		s.cfg.Leg.Leave(c)
		s.mu.Lock()
		delete(s.conns, cn)
		s.mu.Unlock()
		s.log.Info("mcp client left", "name", c.Name)
	}()
}

// leave takes the client out of the roster, if it joined; its session
// ends on its own.
func (cn *conn) leave() {
	cn.mu.Lock()
	c := cn.c
	cn.mu.Unlock()
	if c != nil {
		cn.s.cfg.Leg.Leave(*c)
	}
}

func (cn *conn) close() {
	cn.mu.Lock()
	ss := cn.ss
	cn.mu.Unlock()
	if ss != nil {
		_ = ss.Close()
	}
	if cn.nc != nil { // set before it was listed, never after
		_ = cn.nc.Close()
	}
}

// me is the client's session; an error before initialize.
func (cn *conn) me() (message.Session, error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.c == nil {
		return message.Session{}, errors.New("this MCP session has not finished initializing (send notifications/initialized first)")
	}
	return *cn.c, nil
}

// need refuses a tool call whose token lacks sc.
func (cn *conn) need(sc api.Scope) error {
	if cn.grant.Scopes.Has(sc) {
		return nil
	}
	return fmt.Errorf("this token lacks the %q scope: ask the gateway's owner for a token with it (gateway tokens add --scope %s)", sc, sc)
}

// notify tells the client a message arrived: a log notification (sent only
// when the client asked for logging) and an update of its inbox resource
// (sent only when it subscribed to it). It never blocks the sender: the
// connection's pusher sends them, for the newest message when several
// arrive while it is busy (each is in the inbox anyway).
func (cn *conn) notify(m message.Message) {
	cn.mu.Lock()
	cn.latest = m
	kick := cn.kick
	cn.mu.Unlock()
	if kick == nil {
		return
	}
	select {
	case kick <- struct{}{}:
	default: // a push is already due; it takes the newest
	}
}

// pushLoop is the connection's pusher, until the session ends.
func (cn *conn) pushLoop(ss *sdk.ServerSession) {
	for {
		select {
		case <-cn.done:
			return
		case <-cn.kick:
		}
		cn.mu.Lock()
		m, me := cn.latest, cn.c
		cn.mu.Unlock()
		if cn.channel {
			cn.pushChannel(*me)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		//lint:ignore SA1019 the versions served (sessionVersions) all have logging; it is how a message is pushed
		_ = ss.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Logger: "gateway", Data: map[string]any{
			"event": "message", "id": m.ID, "from": m.FromName, "from_address": m.From, "text": bounded.Clip(m.Body, 2048),
			"hint": "call wait_for_messages to read it",
		}})
		_ = cn.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: InboxURI})
		cancel()
	}
}

// cleanName makes what a client calls itself a session name: printable,
// none of " < > [ ], no leading or trailing space, at most MaxNameLen.
func cleanName(name string) string {
	var b strings.Builder
	n := 0
	for _, r := range name {
		if n == MaxNameLen {
			break
		}
		switch {
		case !unicode.IsPrint(r), unicode.Is(unicode.Bidi_Control, r), strings.ContainsRune(`"<>[]/\`, r):
			r = '-'
		case unicode.IsSpace(r):
			r = '-'
		}
		b.WriteRune(r)
		n++
	}
	out := strings.Trim(b.String(), " -")
	for trimmed := true; trimmed; {
		trimmed = false
		for _, p := range []string{"uds:", "bridge:", "did:", "name:", "mcp:"} { // "mcp:" starts the mcp leg's addresses
			if rest, ok := strings.CutPrefix(out, p); ok {
				out, trimmed = strings.Trim(rest, " -"), true
			}
		}
	}
	if out == "" {
		return "mcp"
	}
	if a, err := addressing.Parse(out); err != nil || a.Kind != addressing.KindName {
		return "mcp-" + out // what would read as a ref, say 3f2a1c
	}
	return out
}
