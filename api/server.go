package api

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// MaxBody caps every request body: a message line is at most 1 MiB on the
// wire, and JSON escaping can grow it.
const MaxBody = 4 << 20

// Config wires a Server.
type Config struct {
	Router  *router.Router
	Logger  *slog.Logger
	Metrics http.Handler // served at /metrics; nil for 404
	Version string
	// Token is the default bearer token on TCP, with every scope. The Unix
	// socket checks the peer's uid instead and needs no token.
	Token string
	// Tokens resolves the other bearer tokens (gateway tokens add) to
	// their scopes; nil accepts Token alone.
	Tokens TokenStore
	// Prefix serves the TCP listener's routes and the console under this
	// path ("/gw": /gw/v1/sessions, /gw/), for a reverse proxy that
	// forwards one path; "" serves them at the root. The Unix socket
	// always serves at the root.
	Prefix string
	// AllowedHosts are the Host header values accepted on TCP, beside the
	// listen address itself and its localhost spellings.
	AllowedHosts []string
	// CORSOrigin is the one browser origin allowed on TCP; empty for none.
	CORSOrigin string
	// RateLimit is each TCP client's budget; zero for DefaultRateLimit,
	// a negative Rate for none.
	RateLimit clock.Bucket
	// TLS, when set, is reloaded by ReloadTLS.
	TLS   *CertReloader
	Clock clock.Clock // nil for the wall clock
	// MaxWait caps ?wait on message reads and sends.
	MaxWait time.Duration
	// Keys keeps the idempotency keys of POST /v1/messages across
	// restarts; nil keeps them in memory only.
	Keys KeyStore
	// Federation reports the federation's status for GET /v1/federation;
	// nil when the gateway runs without federation.
	Federation func(ctx context.Context) any
	// FilesDir is the one directory "files" on a send may name, below
	// which no symlink is followed; empty refuses every attachment.
	FilesDir string
	// MCP serves /mcp (package mcp): Streamable HTTP, checked against
	// the request's grant by each tool; nil for 404.
	MCP http.Handler
	// Console serves the web console's assets at / and /console/ (package
	// console), public like the probes: what they do goes through the API.
	Console http.Handler
	// Actions serves GET /v1/actions/{token}, the one-time signed links of
	// notifications (package notify); nil for 404.
	Actions http.Handler
	// Drop counts a request refused unread, by reason (DropBodies,
	// DropStreams); nil counts nothing.
	Drop func(reason string)
	// StreamStall bounds each write on a long route; zero for StreamStall.
	StreamStall time.Duration
}

// Server serves the control API.
type Server struct {
	cfg   Config
	log   *slog.Logger
	mux   *http.ServeMux
	limit *limiter
	keys  *keyTable // idempotency keys of POST /v1/messages
	// browser holds signed-in browsers and open pairing links.
	browser    browserAuth
	tcpAddr    atomic.Value // string: the TCP listener's address, for pairing URLs
	started    time.Time    // for the uptime of GET /v1/status
	bodies     *bodyGate    // MaxBodies, the control socket's
	tcpBodies  *bodyGate    // MaxBodies, TCP clients with a token, MaxBodiesPerGrant each
	anonBodies *bodyGate    // MaxAnonBodies, TCP requests before a token, MaxAnonBodiesPerIP each
	streams    *streamGate  // MaxStreams, MaxStreamsPerGrant each
}

// NewServer builds the handlers from the route table.
func NewServer(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxWait == 0 {
		cfg.MaxWait = 10 * time.Minute
	}
	if cfg.RateLimit == (clock.Bucket{}) {
		cfg.RateLimit = DefaultRateLimit
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Drop == nil {
		cfg.Drop = func(string) {}
	}
	if cfg.StreamStall == 0 {
		cfg.StreamStall = StreamStall
	}
	s := &Server{bodies: newBodyGate(MaxBodies, 0, nil), tcpBodies: newBodyGate(MaxBodies, MaxBodiesPerGrant, byGrant),
		anonBodies: newBodyGate(MaxAnonBodies, MaxAnonBodiesPerIP, byIP), streams: newStreamGate(MaxStreams, MaxStreamsPerGrant), cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), limit: newLimiter(cfg.RateLimit, cfg.Clock),
		keys:    &keyTable{store: cfg.Keys, clk: cfg.Clock, max: MaxIdempotencyKeys},
		browser: browserAuth{sessions: map[string]*browserSession{}, pairings: map[string]pairingRec{}}, started: cfg.Clock.Now()}
	// paths knows every route's path whatever the method, so a known path
	// asked with the wrong method is a 405 naming the right ones.
	paths, allowed := http.NewServeMux(), map[string][]string{}
	for _, rt := range routes {
		s.mux.Handle(rt.pattern(), s.routeHandler(rt))
		if allowed[rt.path] == nil {
			paths.Handle(rt.path, http.NotFoundHandler())
		}
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	if cfg.MCP != nil {
		s.mux.Handle("/mcp", cfg.MCP)
	}
	if cfg.Console != nil {
		s.mux.Handle("GET /{$}", cfg.Console)
		s.mux.Handle("GET /console/", cfg.Console)
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if _, pat := paths.Handler(r); pat != "" {
			methods := strings.Join(allowed[pat], ", ")
			w.Header().Set("Allow", methods)
			writeError(w, Error{Error: fmt.Sprintf("%s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, methods), Code: CodeMethodNotAllowed})
			return
		}
		writeError(w, Error{Error: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path), Code: CodeNotFound})
	})
	return s
}

// Handler is the mux with full access, for the Unix socket (whose peers
// are checked by uid) and tests.
func (s *Server) Handler() http.Handler {
	next := s.recoverer(s.mux, s.bodies)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := withGrant(r.Context(), Grant{ID: socketOwner, Label: "control socket", Scopes: AllScopes})
		next.ServeHTTP(w, r.WithContext(withParent(ctx, parent{owner: socketOwner})))
	})
}

// TLSConfig is the TCP listener's TLS configuration, or nil without TLS.
func (s *Server) TLSConfig() *tls.Config {
	if s.cfg.TLS == nil {
		return nil
	}
	return s.cfg.TLS.TLSConfig()
}

// ReloadTLS reloads the TLS certificate files now (for SIGHUP); without
// TLS it does nothing. On error the old certificate keeps serving.
func (s *Server) ReloadTLS() error {
	if s.cfg.TLS == nil {
		return nil
	}
	return s.cfg.TLS.Reload()
}

// recoverer serves next, answering a panic with a 500 and reading bodies
// within gate's slots.
func (s *Server) recoverer(next http.Handler, gate *bodyGate) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				path := r.URL.Path
				if strings.HasPrefix(path, "/v1/actions/") {
					path = "/v1/actions/[redacted]" // the token acts: never in a log
				}
				s.log.Error("handler panic", "path", path, "panic", fmt.Sprint(v))
				writeError(w, Error{Error: "internal error", Code: CodeInternal})
			}
		}()
		release, why := gate.take(r)
		if why != "" {
			s.cfg.Drop(DropBodies)
			w.Header().Set("Retry-After", "1")
			writeError(w, Error{Error: "too many requests: " + why + "; retry in 1s", Code: CodeRateLimited, RetryAfter: 1})
			return
		}
		defer release()
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		next.ServeHTTP(w, r)
	})
}

type badRequest string

func (b badRequest) Error() string { return string(b) }

func errBadRequest(s string) error { return badRequest(s) }

func (s *Server) fail(w http.ResponseWriter, err error) {
	var br badRequest
	if errors.As(err, &br) {
		writeError(w, Error{Error: string(br), Code: CodeBadRequest})
		return
	}
	e := errorOf(err)
	if e.Code == CodeInternal {
		s.log.Error("request failed", "err", err)
	}
	writeError(w, e)
}

func (s *Server) sessions(w http.ResponseWriter, r *http.Request) {
	ss := s.cfg.Router.Sessions(r.Context())
	if ss == nil {
		ss = []message.Session{}
	}
	writeJSON(w, http.StatusOK, ss)
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q := r.URL.Query()
	if q.Get("wait") == "" || q.Get("wait") == "0" || q.Get("wait") == "false" {
		out, err := s.cfg.Router.Message(id)
		if err != nil {
			s.fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	wait, err := s.waitFor(q.Get("timeout"))
	if err != nil {
		s.fail(w, err)
		return
	}
	release, ok := s.holdStream(w, r)
	if !ok {
		return
	}
	defer release()
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	out, err := s.cfg.Router.Wait(ctx, id)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// events streams the hub's events. Every write has StreamStall to go out
// (unbounded's stallWriter): it ends when a write fails, the client leaves
// or the hub cuts the subscription.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	last := int64(-1) // by default, only what happens from now on
	raw := r.Header.Get("Last-Event-ID")
	if raw == "" {
		raw = r.URL.Query().Get("last_event_id")
	}
	if raw != "" {
		v, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || v < 0 {
			s.fail(w, errBadRequest(fmt.Sprintf("bad Last-Event-ID %q: want a non-negative integer", raw)))
			return
		}
		last = v
	}
	release, ok := s.holdStream(w, r)
	if !ok {
		return
	}
	defer release()
	replay, gap, sub := s.cfg.Router.Hub().Subscribe(last)
	defer sub.Close()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if gap {
		fmt.Fprintf(w, "event: gap\ndata: {\"type\":\"gap\",\"error\":\"some events after %d were already forgotten\"}\n\n", last)
	}
	for _, ev := range replay {
		if writeEvent(w, ev) != nil {
			return
		}
	}
	if rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			_, err = fmt.Fprint(w, ": keep-alive\n\n")
		case ev, ok := <-sub.C:
			if !ok {
				if err := sub.Err(); err != nil {
					fmt.Fprintf(w, "event: error\ndata: %s\n\n", mustJSON(map[string]string{"type": "error", "error": err.Error()}))
					_ = rc.Flush()
				}
				return
			}
			err = writeEvent(w, ev)
		}
		if err != nil || rc.Flush() != nil {
			return // the client stopped reading (StreamStall) or left
		}
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}

func writeEvent(w io.Writer, ev message.Event) error {
	_, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.ID, ev.Type, mustJSON(ev))
	return err
}

func (s *Server) held(w http.ResponseWriter, r *http.Request) {
	all := s.cfg.Router.Held()
	if all == nil {
		all = []message.Held{}
	}
	writeJSON(w, http.StatusOK, all)
}

// DecideBody is the body of POST /v1/held/{id}.
type DecideBody struct {
	Action string `json:"action"` // release | deny
	Reason string `json:"reason,omitempty"`
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	var b DecideBody
	if err := decode(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	if b.Action != "release" && b.Action != "deny" {
		s.fail(w, errBadRequest(`"action" must be "release" or "deny"`))
		return
	}
	id := r.PathValue("id")
	// A leg's refusal (decided meanwhile, its queue full) is a conflict,
	// not a fault; no leg holding the id is a 404 (errorOf).
	if err := s.cfg.Router.Decide(r.Context(), id, b.Action == "release", b.Reason); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, DecideResult{ID: id, Action: b.Action})
}

// IdleBody is the body of POST /v1/idle.
type IdleBody struct {
	To      string `json:"to"`
	Wait    bool   `json:"wait,omitempty"`
	Timeout string `json:"timeout,omitempty"`
}

// IdleResult answers POST /v1/idle; Notice is set when it waited and got one.
type IdleResult struct {
	SubscriptionID string              `json:"subscription_id"`
	Address        string              `json:"address"`
	Notice         *message.IdleNotice `json:"notice,omitempty"`
}

func (s *Server) idle(w http.ResponseWriter, r *http.Request) {
	var b IdleBody
	if err := decode(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	wait, err := s.waitFor(b.Timeout)
	if err != nil {
		s.fail(w, err)
		return
	}
	// Subscribe before asking, so a notice that comes at once is not missed.
	var sub *router.Sub
	if b.Wait {
		release, ok := s.holdStream(w, r)
		if !ok {
			return
		}
		defer release()
		_, _, sub = s.cfg.Router.Hub().Subscribe(-1)
		defer sub.Close()
	}
	// A leg without idle notices is a 400, its peer's refusal a 409 (errorOf).
	id, target, err := s.cfg.Router.NotifyWhenIdle(r.Context(), b.To)
	if err != nil {
		s.fail(w, err)
		return
	}
	res := IdleResult{SubscriptionID: id, Address: target.Address}
	if b.Wait {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		defer cancel()
	loop:
		for {
			select {
			case <-ctx.Done():
				break loop
			case ev, ok := <-sub.C:
				if !ok {
					break loop
				}
				if ev.Idle != nil && ev.Idle.SubID == id {
					res.Notice = ev.Idle
					break loop
				}
			}
		}
	}
	writeJSON(w, http.StatusCreated, res)
}

// permissions lists the pending prompts, oldest first; ?all=true adds the
// recently answered and withdrawn ones.
func (s *Server) permissions(w http.ResponseWriter, r *http.Request) {
	all, err := queryBool(r, "all")
	if err != nil {
		s.fail(w, err)
		return
	}
	ps := s.cfg.Router.Permissions()
	if all {
		ps = append(s.cfg.Router.SettledPermissions(), ps...)
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].Created.Before(ps[j].Created) })
	}
	if ps == nil {
		ps = []message.PermissionRequest{}
	}
	writeJSON(w, http.StatusOK, ps)
}

func (s *Server) getPermission(w http.ResponseWriter, r *http.Request) {
	p, err := s.cfg.Router.Permission(r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// answerPermission answers with the body, a message.PermissionAnswer, and
// returns the settled prompt.
func (s *Server) answerPermission(w http.ResponseWriter, r *http.Request) {
	var a message.PermissionAnswer
	if err := decode(r, &a); err != nil {
		s.fail(w, err)
		return
	}
	a.By = answeredBy(r, a.By)
	p, err := s.cfg.Router.AnswerPermission(r.Context(), r.PathValue("id"), a)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// ControlBody is the body of POST /v1/control.
type ControlBody struct {
	Address string              `json:"address"`
	Kind    message.ControlKind `json:"kind"`
	Mode    string              `json:"mode,omitempty"`
	Model   string              `json:"model,omitempty"`
}

// ControlReply answers POST /v1/control: the request and the session's
// answer (acknowledged true: it answered success).
type ControlReply struct {
	ControlBody
	message.ControlResult
}

func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	var b ControlBody
	if err := decode(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	if strings.TrimSpace(b.Address) == "" {
		s.fail(w, errBadRequest(`"address" is required`))
		return
	}
	res, err := s.cfg.Router.Control(r.Context(), b.Address, message.Control{Kind: b.Kind, Mode: b.Mode, Model: b.Model})
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ControlReply{ControlBody: b, ControlResult: res})
}

// remoteInfo answers with what the session ?address= told about itself.
func (s *Server) remoteInfo(w http.ResponseWriter, r *http.Request) {
	to := r.URL.Query().Get("address")
	if strings.TrimSpace(to) == "" {
		s.fail(w, errBadRequest(`"address" query parameter is required`))
		return
	}
	info, err := s.cfg.Router.SessionInfo(r.Context(), to)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// resolve says which session ?address= names, as sends and control requests
// would resolve it.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	to := r.URL.Query().Get("address")
	if strings.TrimSpace(to) == "" {
		s.fail(w, errBadRequest(`"address" query parameter is required`))
		return
	}
	_, target, err := s.cfg.Router.Resolve(r.Context(), to)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, target)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Health{Status: "ok", Version: s.cfg.Version})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	legs := map[string]string{}
	ok := true
	for name, err := range s.cfg.Router.Ready() {
		st := "ready"
		if err != nil {
			st, ok = err.Error(), false
		}
		legs[string(name)] = st
	}
	code := http.StatusOK
	if !ok {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, Readiness{Ready: ok, Legs: legs})
}

// queryBool reads an optional true/false query parameter (false when absent).
func queryBool(r *http.Request, name string) (bool, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return false, nil
	}
	v, err := strconv.ParseBool(raw)
	if err != nil {
		return false, errBadRequest(fmt.Sprintf("bad %s=%q: want true or false", name, raw))
	}
	return v, nil
}
