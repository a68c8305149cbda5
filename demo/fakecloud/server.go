package fakecloud

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
)

// DefaultRequiredHeaders are the headers sent on every REST
// request that a client cannot leave out without the service refusing it.
// The anthropic-client-* headers are the web client's identification and are
// not checked by default (the CLI does not send web_claude_ai).
var DefaultRequiredHeaders = []string{"anthropic-version", "anthropic-beta", "x-organization-uuid"}

// Options configures a fake.
type Options struct {
	// Token is the accepted OAuth bearer token; SessionKey the accepted value
	// of the sessionKey cookie. A request must present one of those that is
	// set. With both empty, credentials are not checked.
	Token      string
	SessionKey string
	// OrgUUID is the organisation: x-organization-uuid on REST, the
	// organization_uuid query parameter on the WebSocket, and the {orgId} of
	// the environment paths. Empty accepts any organisation.
	OrgUUID string
	// RequiredHeaders must be present on every REST request (400 naming the
	// first missing one). Nil means DefaultRequiredHeaders; an empty non-nil
	// slice checks none. The WebSocket is exempt: browsers cannot set headers
	// on it, which is why the organisation goes in its query.
	RequiredHeaders []string
	// Environments answer the environment endpoints; nil gives one online
	// bridge environment, "env_fake_bridge".
	Environments []Environment
	// QueueLen bounds each subscriber's outgoing queue (default 1024). A
	// subscriber whose queue is full is closed with 1008, as a real server
	// sheds a consumer that does not keep up.
	QueueLen int
	// PingInterval is how often an open v2 event stream sends a ": ping"
	// comment (default 15 s; negative: never).
	PingInterval time.Duration
	// KeepAlive is how often every subscribe WebSocket gets a server
	// {"type":"keep_alive"} line (default 30 s; negative: never). Server
	// keep-alives do not count towards a FailSpec's After.
	KeepAlive time.Duration
	// Logf, if not nil, receives one line per refused or unknown request.
	Logf func(format string, args ...any)

	// Addr is where to listen (default "127.0.0.1:0"). Its host must be a
	// loopback address or "localhost"; anything else is ErrNotLoopback: the
	// fake trusts whoever holds the token and must never face a network.
	Addr string
	// Clock is the time source of timestamps, the request log, keep-alives,
	// pings, scripted delays, token lifetimes and the echo pace; nil is the
	// wall clock. testkit/clock.FakeClock fits.
	Clock clock.Clock

	// DeviceKey binds every session to the device holding this Ed25519 key.
	// A posted event carrying a valid "client_attestation" is classified
	// attested, one carrying none bound_unattested, and one carrying an
	// invalid one is refused with 400. Nil classifies every event unbound
	// and ignores attestations.
	DeviceKey ed25519.PublicKey

	// RefreshToken turns on POST /v1/oauth/token (grant_type=refresh_token):
	// the current refresh token buys a new access token, accepted like
	// Token, and a rotated refresh token; the old one stops working.
	RefreshToken string
	// ClientID, if set, must be the client_id of a refresh (form field or
	// HTTP Basic user); if empty any non-empty client_id is taken.
	ClientID string
	// TokenLifetime is the expires_in of issued tokens, which also stop
	// working after it (default one hour).
	TokenLifetime time.Duration
	// TokenExpires makes ExpireTokens expire Token as well as issued tokens.
	TokenExpires bool

	// Echo runs a built-in worker in every session: a posted user message is
	// answered with a streamed "echo: <text>" turn; "ask ...", "bash CMD"
	// and "plan" raise AskUserQuestion, Bash and ExitPlanMode prompts first
	// and reply once they are answered over HTTP; posted interrupt,
	// set_permission_mode and set_model requests are honoured and answered.
	Echo bool
	// Models and Commands are what every session's initialize answer
	// lists (nil: none, as captured traffic shows).
	Models   []Model
	Commands []Command
	// EchoPace is the time between the streamed copies of an echo turn
	// (default 0: all at once). With a pace, an interrupt can land mid-turn.
	EchoPace time.Duration
}

// Model is one model of initialize's answer, in the shape the Agent SDK
// documents (captured traffic shows only an empty list).
type Model struct {
	Value       string `json:"value"`
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
}

// Command is one slash command of initialize's answer, in the SDK's shape.
type Command struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	ArgumentHint string `json:"argumentHint"`
}

// Environment is one entry of the environments list
// (docs/protocols/claude-ai-remote.md#rest-sessions-api).
type Environment struct {
	Kind          string          `json:"kind"`
	EnvironmentID string          `json:"environment_id"`
	Name          string          `json:"name"`
	CreatedAt     string          `json:"created_at"`
	State         string          `json:"state"`
	Config        json.RawMessage `json:"config"`
	BridgeInfo    *BridgeInfo     `json:"bridge_info"`
}

// BridgeInfo describes the machine behind a bridge environment.
type BridgeInfo struct {
	MaxSessions int     `json:"max_sessions"`
	MachineName string  `json:"machine_name"`
	Directory   string  `json:"directory"`
	Branch      string  `json:"branch"`
	GitRepoURL  *string `json:"git_repo_url"`
	Online      bool    `json:"online"`
	SpawnMode   *string `json:"spawn_mode"`
}

// Errors returned by the scripting API and Listen.
var (
	ErrNoSession   = errors.New("fakecloud: no such session")
	ErrBadLine     = errors.New("fakecloud: line is not a message")
	ErrNoPrompt    = errors.New("fakecloud: no such pending prompt")
	ErrNotLoopback = errors.New("fakecloud: listen address is not loopback")
)

// Server is a running fake.
type Server struct {
	opts   Options
	clock  clock.Clock
	srv    *http.Server
	ln     net.Listener
	ctx    context.Context // cancelled by Close; ends every subscription and worker
	cancel context.CancelFunc
	done   chan struct{} // closed when Serve returns
	// wg counts every request being handled (subscriptions included) and
	// every echo worker; Close waits for it. Add only under mu, while open.
	wg sync.WaitGroup

	logMu sync.Mutex
	log   requestLog

	mu       sync.Mutex
	closed   bool
	seq      int // ids for sessions and events, in creation order
	sessions map[string]*session
	order    []string // session ids in creation order
	fails    []*FailSpec
	tokens   tokens
}

type session struct {
	Session
	events   []json.RawMessage // stored events, the order they were added
	ids      []string          // uuid of each stored event
	byUUID   map[string]int    // index of the first stored event with a uuid
	meta     []eventMeta       // v2 envelope fields of each stored event; sequence_num is index+1
	pending  []ControlRequest
	answers  []Answer
	posted   []Message
	controls []ControlRequest // control requests received over the WebSocket or posted
	classes  []Classification // one per posted event, in post order
	pings    int
	dups     int
	subs     map[*subscriber]struct{}
	streams  map[*stream]struct{} // open v2 event streams
	worker   *echoWorker          // nil until Echo's worker is first needed
	// noEcho keeps posted user messages off the stream and out of the
	// history (SuppressEcho); held are those kept, in post order.
	noEcho bool
	held   []json.RawMessage
	// refuse maps a control subtype to the error the session answers it
	// with (RefuseControls).
	refuse map[string]string
}

// Session is a session as the REST endpoints show it. No published
// description gives a session object, so the field names are a guess (see the package tests).
type Session struct {
	ID             string          `json:"id"`
	Title          string          `json:"title"`
	Status         string          `json:"session_status"`
	EnvironmentID  string          `json:"environment_id,omitempty"`
	CreatedAt      string          `json:"created_at"`
	UpdatedAt      string          `json:"updated_at"`
	SessionContext json.RawMessage `json:"session_context,omitempty"`
}

// Answer is one control_response event posted over HTTP.
type Answer struct {
	RequestID string
	Subtype   string    // "success" or "error"
	Decision  *Decision // nil unless the response has "behavior"
	Error     string
	// Matched says the answer resolved a pending can_use_tool prompt.
	Matched bool
	Raw     json.RawMessage
}

// Start runs a fake on 127.0.0.1 for the length of a test; t.Cleanup closes it.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	s, err := Listen(opts)
	if err != nil {
		t.Fatalf("fakecloud: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Listen runs a fake on opts.Addr (127.0.0.1, any port, by default) until Close.
func Listen(opts Options) (*Server, error) {
	if opts.RequiredHeaders == nil {
		opts.RequiredHeaders = DefaultRequiredHeaders
	}
	if opts.Environments == nil {
		opts.Environments = []Environment{{
			Kind: "bridge", EnvironmentID: "env_fake_bridge", Name: "fake:/work:0001",
			CreatedAt: "2026-01-01T00:00:00Z", State: "active",
			BridgeInfo: &BridgeInfo{MaxSessions: 1, MachineName: "fake", Directory: "/work", Branch: "HEAD", Online: true},
		}}
	}
	if opts.QueueLen <= 0 {
		opts.QueueLen = 1024
	}
	if opts.PingInterval == 0 {
		opts.PingInterval = 15 * time.Second
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = 30 * time.Second
	}
	if opts.TokenLifetime <= 0 {
		opts.TokenLifetime = time.Hour
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if err := CheckLoopback(opts.Addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s := &Server{opts: opts, clock: opts.Clock, ln: ln, done: make(chan struct{}), sessions: map[string]*session{}}
	if s.clock == nil {
		s.clock = clock.Real{}
	}
	s.tokens = tokens{refresh: opts.RefreshToken, issued: map[string]time.Time{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln) // returns ErrServerClosed on Close
	}()
	return s, nil
}

// CheckLoopback reports whether addr (host:port) names a loopback host: a
// loopback IP or "localhost". It is Listen's check, exported for callers
// that validate a flag before starting anything.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotLoopback, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%w: %q", ErrNotLoopback, host)
	}
	return nil
}

// URL is the base URL, e.g. http://127.0.0.1:PORT.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// WebSocketURL is the subscribe URL of a session, with replay if asked.
func (s *Server) WebSocketURL(sessionID string, replay bool) string {
	u := "ws://" + s.ln.Addr().String() + "/v1/sessions/ws/" + sessionID + "/subscribe?organization_uuid=" + s.opts.OrgUUID
	if replay {
		u += "&replay=true"
	}
	return u
}

// Close stops the server, ends every subscription and echo worker, and
// waits for every handler and worker to return.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	err := s.srv.Close() // does not touch hijacked WebSocket connections
	<-s.done
	s.wg.Wait()
	return err
}

// track counts a handler or worker in s.wg; false once Close has begun.
// s.mu must be held.
func (s *Server) track() bool {
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sessions", s.listSessions)
	mux.HandleFunc("POST /v1/sessions", s.createSession)
	mux.HandleFunc("GET /v1/sessions/{id}", s.getSession)
	mux.HandleFunc("PATCH /v1/sessions/{id}", s.patchSession)
	mux.HandleFunc("GET /v1/sessions/{id}/events", s.listEvents)
	mux.HandleFunc("POST /v1/sessions/{id}/events", s.postEvents)
	mux.HandleFunc("GET /v1/sessions/{id}/share-status", s.shareStatus)
	mux.HandleFunc("GET /v1/environment_providers/private/organizations/{org}/environments", s.listEnvironments)
	mux.HandleFunc("GET /v1/environment_providers/private/organizations/{org}/environments/{env}", s.getEnvironment)
	mux.HandleFunc("GET /v1/sessions/ws/{id}/subscribe", s.subscribe)
	mux.HandleFunc("GET /v1/code/sessions", s.listSessions)
	mux.HandleFunc("GET /v1/code/sessions/{id}", s.getSession)
	mux.HandleFunc("POST /v1/code/sessions/{id}/events", s.postEvents)
	mux.HandleFunc("GET /v1/code/sessions/{id}/events", s.listCodeEvents)
	mux.HandleFunc("GET /v1/code/sessions/{id}/events/stream", s.streamEvents)
	mux.HandleFunc("POST /v1/code/sessions/{id}/ping", s.ping)
	mux.HandleFunc("POST "+tokenPath, s.oauthToken)
	mux.HandleFunc("GET "+LivePath, s.live)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		s.mu.Lock()
		open := s.track()
		s.mu.Unlock()
		if !open {
			writeError(w, http.StatusServiceUnavailable, "api_error", "shutting down")
			return
		}
		defer s.wg.Done()
		ws := strings.HasPrefix(r.URL.Path, "/v1/sessions/ws/")
		if f := s.takeFail(r, phaseRequest); f != nil {
			if f.Delay > 0 && !s.sleep(r.Context(), f.Delay) {
				return
			}
			if f.Status == 0 { // a delay only: now answer as usual
				s.opts.Logf("fakecloud: scripted delay of %v for %s %s", f.Delay, r.Method, r.URL.Path)
			} else {
				s.opts.Logf("fakecloud: scripted %d for %s %s", f.Status, r.Method, r.URL.Path)
				if f.Location != "" {
					w.Header().Set("Location", f.Location)
				}
				if f.RetryAfter > 0 {
					w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
				}
				writeError(w, f.Status, errorType(f.Status), "scripted failure")
				return
			}
		}
		// The token endpoint is how a client without a valid token gets one.
		if r.URL.Path != tokenPath {
			if status, msg := s.authorize(r, ws); status != 0 {
				s.opts.Logf("fakecloud: %d %s %s: %s", status, r.Method, r.URL.Path, msg)
				writeError(w, status, errorType(status), msg)
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// sleep waits d on the clock; false if the request or the server ended first.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	ch, t := clock.After(s.clock, d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
	case <-s.ctx.Done():
	}
	return false
}

// isStream says r opens a subscribe WebSocket or a v2 events stream.
func isStream(r *http.Request) bool {
	p := r.URL.Path
	return strings.HasPrefix(p, "/v1/sessions/ws/") ||
		strings.HasPrefix(p, "/v1/code/sessions/") && strings.HasSuffix(p, "/events/stream")
}

// authorize checks credentials, then headers, then the organisation: a
// request with no credentials learns nothing else about what it got wrong.
func (s *Server) authorize(r *http.Request, ws bool) (int, string) {
	o := s.opts
	if o.Token != "" || o.SessionKey != "" || o.RefreshToken != "" {
		ok, expired := false, false
		if tok, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found {
			switch s.checkToken(tok) {
			case tokenValid:
				ok = true
			case tokenExpired:
				expired = true
			}
		}
		if !ok && o.SessionKey != "" {
			c, err := r.Cookie("sessionKey")
			ok = err == nil && c.Value == o.SessionKey
		}
		if !ok && expired {
			return http.StatusUnauthorized, "OAuth token has expired"
		}
		if !ok {
			return http.StatusUnauthorized, "missing or invalid credentials"
		}
	}
	org := r.Header.Get("x-organization-uuid")
	if ws {
		org = r.URL.Query().Get("organization_uuid")
		if org == "" {
			return http.StatusBadRequest, "missing query parameter organization_uuid"
		}
	} else {
		for _, h := range o.RequiredHeaders {
			if r.Header.Get(h) == "" {
				return http.StatusBadRequest, "missing required header " + strings.ToLower(h)
			}
		}
	}
	if o.OrgUUID == "" {
		return 0, ""
	}
	if org != "" && org != o.OrgUUID {
		return http.StatusForbidden, "organization mismatch"
	}
	return 0, ""
}

// errorType is the Anthropic error type for a status.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) now() string { return s.clock.Now().UTC().Format(time.RFC3339Nano) }

// nextID returns a fresh id with prefix; s.mu must be held.
func (s *Server) nextID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s%012d", prefix, s.seq)
}
