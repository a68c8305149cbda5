package api

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// route is one endpoint. The mux is built from routes and the OpenAPI
// document is generated from them, so the two cannot drift.
type route struct {
	method, path, summary string
	// scope a token needs on TCP; 0 means public (probes).
	scope  Scope
	query  []param
	in     any // the JSON request body's Go type, or nil
	out    any // the success body's Go type, or nil
	status int // the success status; 0 for 200
	// produces is the success media type when it is not JSON.
	produces string
	// anon routes need no token on TCP but are rate limited (login).
	anon bool
	// long routes stream or wait (?wait, "wait": true): they get no read or
	// write deadline once their body is read; their own timeouts bound them.
	long   bool
	handle func(*Server, http.ResponseWriter, *http.Request)
}

type param struct{ name, typ, doc string }

var (
	qAll  = param{"all", "boolean", "also list recently settled entries"}
	qWait = []param{{"wait", "boolean", "block until a final receipt"}, {"timeout", "string", "how long to wait, a Go duration (default 30s)"}}
)

// Health is GET /healthz's answer.
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}

// DecideResult answers POST /v1/held/{id}.
type DecideResult struct {
	ID     string `json:"id"`
	Action string `json:"action"`
}

// routes is the API. Held decisions need approve, not send: releasing a held
// message lets it past the gate that held it, as answering a prompt does.
// It is filled in init because /openapi.json's handler reads it.
var routes []route

func init() {
	routes = []route{
		{method: "GET", path: "/v1/status", summary: "The gateway on one screen: version, uptime, each leg's state with its sessions (by host) and aliases, remote links, pending prompts, held messages, outbox depth and the federation's status.", scope: ScopeRead,
			out: Status{}, handle: (*Server).status},
		{method: "GET", path: "/v1/sessions", summary: "List every reachable session on every leg.", scope: ScopeRead,
			out: []message.Session{}, handle: (*Server).sessions},
		{method: "POST", path: "/v1/messages", summary: "Send a message to an address; with wait, block until a final receipt. An Idempotency-Key header makes a retry with the same body answer the first message (Idempotent-Replayed: true) and send nothing, also once the gateway forgot the message (Idempotent-Forgotten: true, with the status the first request got); another body under the key is 422.", scope: ScopeSend,
			in: SendBody{}, out: router.Outbound{}, status: http.StatusCreated, long: true, handle: (*Server).send},
		{method: "GET", path: "/v1/messages/{id}", summary: "Where a sent message stands; ?wait=1&timeout=30s blocks until final.", scope: ScopeRead,
			query: qWait, out: router.Outbound{}, long: true, handle: (*Server).getMessage},
		{method: "GET", path: "/v1/events", summary: "Server-sent events with ids; Last-Event-ID (or ?last_event_id) replays what was kept. Each data line is an Event.", scope: ScopeRead,
			query: []param{{"last_event_id", "integer", "replay events after this id"}}, out: message.Event{}, produces: "text/event-stream", long: true, handle: (*Server).events},
		{method: "GET", path: "/v1/held", summary: "Inbound messages held for a decision.", scope: ScopeRead,
			out: []message.Held{}, handle: (*Server).held},
		{method: "POST", path: "/v1/held/{id}", summary: "Release or deny a held message.", scope: ScopeApprove,
			in: DecideBody{}, out: DecideResult{}, handle: (*Server).decide},
		{method: "POST", path: "/v1/idle", summary: "Subscribe to a peer's idle notice; it arrives as an idle event, or in the answer with wait.", scope: ScopeSend,
			in: IdleBody{}, out: IdleResult{}, status: http.StatusCreated, long: true, handle: (*Server).idle},
		{method: "GET", path: "/v1/permissions", summary: "Pending permission prompts (of remote sessions, and of local ones through their hooks or channels: see source), oldest first; ?all=true adds recently settled ones.", scope: ScopeRead,
			query: []param{qAll}, out: []message.PermissionRequest{}, handle: (*Server).permissions},
		{method: "GET", path: "/v1/permissions/{id}", summary: "One permission prompt, pending or recently settled.", scope: ScopeRead,
			out: message.PermissionRequest{}, handle: (*Server).getPermission},
		{method: "POST", path: "/v1/permissions/{id}", summary: "Answer a pending prompt as its kind takes it (its verbs): allow (with suggestions by number, a mode switch, rules, an edited input) or deny; a question takes answers, and an allow without them is refused. 200 with the settled prompt, 404 unknown, 409 already settled, 400 invalid, 502 the leg could not deliver it.", scope: ScopeApprove,
			in: message.PermissionAnswer{}, out: message.PermissionRequest{}, handle: (*Server).answerPermission},
		{method: "GET", path: "/v1/away", summary: "The away switch: while on, a local session's prompt (from its PermissionRequest hook) waits for an answer from elsewhere instead of going back to its terminal after --local-prompt-wait.", scope: ScopeRead,
			out: AwayStatus{}, handle: (*Server).getAway},
		{method: "PUT", path: "/v1/away", summary: "Switch away on or off (body {\"away\": true}); off gives every local prompt that waited longer than --local-prompt-wait back to its terminal at once. 200 with the switch.", scope: ScopeApprove,
			in: AwayBody{}, out: AwayStatus{}, handle: (*Server).putAway},
		{method: "POST", path: "/v1/control", summary: "Send a session a control request: interrupt, set_permission_mode (default, acceptEdits, plan, bypassPermissions) or set_model (one the session offers, see /v1/remote/info), and wait for the session's answer: 200 acknowledged (false when the session is not followed and its answer cannot be read), 400 invalid (nothing sent), 404 unknown session, 409 the session answered with an error, 504 no answer in time.", scope: ScopeApprove,
			in: ControlBody{}, out: ControlReply{}, long: true, handle: (*Server).control},
		{method: "GET", path: "/v1/remote/info", summary: "What the remote session ?address= told about itself: initialize's models, commands and output style, its permission mode and model as last reported or accepted; 404 when the gateway neither lists nor follows it.", scope: ScopeRead,
			query: []param{{"address", "string", "the session's address (required)"}}, out: message.SessionInfo{}, handle: (*Server).remoteInfo},
		{method: "POST", path: "/v1/local/sessions", summary: "Start a hosted session: the real Claude Code or Qwen Code CLI (agent claude or qwen) run headless by the gateway in cwd (a directory of the gateway's user), named name (default agent-XXXXXX), with a first prompt, permission_mode and model; 201 with the session as listed (protocol hosted, address hosted:NAME), which then takes messages sent to it by name as its turns; 400 invalid or the CLI not installed (the error names the install command), 409 --max-hosted reached, 404 starting sessions is off.", scope: ScopeSend,
			in: message.StartSpec{}, out: message.Session{}, status: http.StatusCreated, handle: (*Server).startLocal},
		{method: "DELETE", path: "/v1/local/sessions/{name}", summary: "Stop the hosted session name (its CLI ends, and it is not resumed); 200 with the session as it was listed, 404 unknown, 400 not a session the gateway started.", scope: ScopeSend,
			out: message.Session{}, handle: (*Server).stopLocal},
		{method: "POST", path: "/v1/remote/sessions", summary: "Create a remote session (in an environment, with a title, a model, a GitHub repository and branch, a first prompt); 201 with the session as listed, which the gateway follows from then on; 400 invalid, 404 no remote leg, 502 the cloud refused.", scope: ScopeSend,
			in: NewRemoteSession{}, out: message.Session{}, status: http.StatusCreated, handle: (*Server).createRemote},
		{method: "POST", path: "/v1/remote/title", summary: "Set the title of the remote session at address; 200 with the session as listed, 404 unknown, 502 the cloud refused.", scope: ScopeSend,
			in: TitleBody{}, out: message.Session{}, handle: (*Server).retitleRemote},
		{method: "POST", path: "/v1/remote/archive", summary: "Archive the remote session at address; 200 with the session as listed, 404 unknown, 502 the cloud refused.", scope: ScopeApprove,
			in: ArchiveBody{}, out: message.Session{}, handle: (*Server).archiveRemote},
		{method: "GET", path: "/v1/remote/environments", summary: "The environments remote sessions can be created in (claude.ai's environment list); 404 no remote leg.", scope: ScopeRead,
			out: []message.Environment{}, handle: (*Server).environments},
		{method: "GET", path: "/v1/resolve", summary: "The session ?address= resolves to, as sends and control requests resolve it.", scope: ScopeRead,
			query: []param{{"address", "string", "the address to resolve (required)"}}, out: message.Session{}, handle: (*Server).resolve},
		{method: "GET", path: "/v1/outbox", summary: "Messages accepted for a remote session and not yet acknowledged by its server, oldest first; ?all=true adds recently acknowledged and failed ones.", scope: ScopeRead,
			query: []param{qAll}, out: []message.OutboxItem{}, handle: (*Server).outbox},
		{method: "GET", path: "/v1/federation", summary: "This host's view of the federation: hosts with their session counts and when each was last heard, the link to NATS, the lag of this host's consumers, drops by reason; {\"enabled\": false} without federation.", scope: ScopeRead,
			out: FederationStatus{}, handle: (*Server).federation},
		{method: "POST", path: "/v1/login", summary: "Sign a browser in: a bearer token or a one-time pairing code (from POST /v1/pairings) for a session cookie (HttpOnly, SameSite=Strict, Secure over TLS), 201 with the scopes and the CSRF token every state-changing request on the cookie must carry in X-CSRF-Token; 401 for a wrong token or a used, expired or unknown code. No token needed.",
			anon: true, in: LoginBody{}, out: LoginInfo{}, status: http.StatusCreated, handle: (*Server).login},
		{method: "GET", path: "/v1/login", summary: "Who the caller is signed in as, its scopes and, for a browser session, its CSRF token.", scope: ScopeRead,
			out: LoginInfo{}, handle: (*Server).whoami},
		{method: "POST", path: "/v1/logout", summary: "End the browser session of the request's cookie; 204.", scope: ScopeRead,
			status: http.StatusNoContent, handle: (*Server).logout},
		{method: "POST", path: "/v1/pairings", summary: "Open a one-time pairing link (gateway pair): the browser that opens it before it expires is signed in with read and the asked scopes, none beyond the caller's; the link works once.", scope: ScopeRead,
			in: PairBody{}, out: Pairing{}, status: http.StatusCreated, handle: (*Server).pair},
		{method: "GET", path: "/v1/actions/{token}", summary: "Follow a notification's one-time signed link: it answers the prompt or decides the held message it names, once, and says what happened in plain text; 403 a forged link, 410 a used or expired one, 409 the prompt or message was settled meanwhile, 404 without notifications. No token needed: the signature is the authority.",
			anon: true, produces: "text/plain", handle: (*Server).action},
		{method: "GET", path: "/healthz", summary: "The process is alive. No token needed.",
			out: Health{}, handle: (*Server).healthz},
		{method: "GET", path: "/readyz", summary: "Every enabled leg is ready (503 when not), with each leg's state. No token needed.",
			out: Readiness{}, handle: (*Server).readyz},
		{method: "GET", path: "/metrics", summary: "Prometheus text exposition.", scope: ScopeRead,
			produces: "text/plain", handle: (*Server).metrics},
		{method: "GET", path: "/openapi.json", summary: "This document.", scope: ScopeRead,
			out: map[string]any{}, handle: (*Server).openapi},
	}
}

// pattern is the route's http.ServeMux pattern.
func (rt route) pattern() string { return rt.method + " " + rt.path }

func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Actions == nil {
		writeError(w, Error{Error: "notifications are off", Code: CodeNotFound})
		return
	}
	s.cfg.Actions.ServeHTTP(w, r)
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		writeError(w, Error{Error: "metrics are off", Code: CodeNotFound})
		return
	}
	s.cfg.Metrics.ServeHTTP(w, r)
}

// routeHandler is one route's handler with its scope check and, for long
// routes, the deadlines lifted once the body is in.
func (s *Server) routeHandler(rt route) http.Handler {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rt.handle(s, w, r) })
	if rt.long {
		h = s.unbounded(h)
	}
	if rt.scope != 0 {
		h = requireScope(rt.scope, h)
	}
	return h
}

// unbounded reads the (capped) body under the server's read timeout, then
// lifts the connection's deadlines: a stream or a wait ends by its own
// timeout or the client leaving. Without this, ReadTimeout would cancel the
// request's context mid-stream. Each write then has StreamStall of its
// own (stallWriter), so a client that stops reading cannot hold it.
func (s *Server) unbounded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			b, err := readBody(r)
			if err != nil {
				writeError(w, errorOf(err))
				return
			}
			r.Body = newReadAlready(b)
		}
		next.ServeHTTP(StreamWriter(w, s.cfg.StreamStall), r)
	})
}

// Timeouts and caps of every listener's http.Server.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 10 * time.Second // whole request, body included: 408 past it
	WriteTimeout      = 60 * time.Second // except long routes
	IdleTimeout       = 2 * time.Minute
	MaxHeaderBytes    = 64 << 10
)

// NewHTTPServer wraps h with the timeouts and header cap every listener
// gets.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler: h, ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout,
		WriteTimeout: WriteTimeout, IdleTimeout: IdleTimeout, MaxHeaderBytes: MaxHeaderBytes,
	}
}

// TCPHandler adds, for a listener on addr: the Host allowlist, CORS for the
// configured origin only, bearer tokens with scopes (/healthz and /readyz
// need none) and per-client rate limits.
func (s *Server) TCPHandler(addr string) http.Handler {
	allowed := map[string]bool{canonicalHost(addr): true}
	if _, port, err := net.SplitHostPort(addr); err == nil {
		for _, h := range []string{"127.0.0.1", "localhost", "[::1]"} {
			allowed[h+":"+port] = true
		}
	}
	for _, h := range s.cfg.AllowedHosts {
		allowed[canonicalHost(h)] = true
	}
	s.tcpAddr.Store(addr)
	public, anon := map[string]bool{}, http.NewServeMux()
	for _, rt := range routes {
		if rt.anon {
			anon.Handle(rt.pattern(), http.NotFoundHandler())
		} else if rt.scope == 0 {
			public[rt.path] = true
		}
	}
	next, anonNext := s.recoverer(s.mux, s.tcpBodies), s.recoverer(s.mux, s.anonBodies)
	return s.underPrefix(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed[canonicalHost(r.Host)] {
			writeError(w, Error{Error: fmt.Sprintf("host %q is not allowed (see --allow-host)", r.Host), Code: CodeBadHost})
			return
		}
		if s.cors(w, r) {
			return
		}
		g, ok := s.authenticate(r)
		var sess *browserSession
		if !ok && r.Header.Get("Authorization") == "" {
			if sess, ok = s.sessionFor(r); ok {
				g = sess.grant
			}
		}
		if (public[r.URL.Path] || s.consoleAsset(r.URL.Path)) && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			// Probes are never rate limited: a flood of wrong tokens from
			// an address must not make the gateway look dead to the
			// health checks sharing it (gateway health --url).
			next.ServeHTTP(w, r.WithContext(withGrant(r.Context(), g)))
			return
		}
		key := "grant:" + g.ID
		if !ok {
			key = "ip:" + remoteIP(r)
		}
		if allow, wait := s.limit.allow(key); !allow {
			secs := retryAfter(wait)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			writeError(w, Error{Error: fmt.Sprintf("too many requests: retry in %ds", secs), Code: CodeRateLimited, RetryAfter: secs})
			return
		}
		if _, pat := anon.Handler(r); pat != "" {
			if ok { // its body counted to its grant, as every authenticated request's
				next.ServeHTTP(w, r.WithContext(withGrant(r.Context(), g)))
			} else {
				anonNext.ServeHTTP(w, anonBody(w, r))
			}
			return
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gateway"`)
			writeError(w, Error{Error: "missing or wrong bearer token (see <state-dir>/api-token or gateway tokens add)", Code: CodeUnauth})
			return
		}
		if sess != nil && !s.checkBrowser(w, r, sess) {
			return
		}
		next.ServeHTTP(w, r.WithContext(withParent(withGrant(r.Context(), g), parentOf(r, sess, g))))
	}))
}

// underPrefix serves h under Config.Prefix: PREFIX/x is h's /x, PREFIX
// alone is sent on to PREFIX/, anything else is not found.
func (s *Server) underPrefix(h http.Handler) http.Handler {
	prefix := s.cfg.Prefix
	if prefix == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == prefix {
			http.Redirect(w, r, prefix+"/", http.StatusMovedPermanently)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok || !strings.HasPrefix(rest, "/") {
			writeError(w, Error{Error: fmt.Sprintf("not found: this gateway serves under %s/", prefix), Code: CodeNotFound})
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = rest, ""
		h.ServeHTTP(w, r2)
	})
}

// CheckPrefix validates an --api-prefix: empty, or a path of one or more
// segments of letters, digits and - _ . ~ (no "." or ".." segment),
// without a trailing slash.
func CheckPrefix(p string) error {
	if p == "" {
		return nil
	}
	bad := fmt.Errorf("--api-prefix %q: want a path like /gateway (letters, digits, - _ . ~; no trailing /)", p)
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || len(p) > 128 {
		return bad
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad
		}
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.~", c)) {
				return bad
			}
		}
	}
	return nil
}

// consoleAsset reports whether path is one of the console's public assets.
func (s *Server) consoleAsset(path string) bool {
	return s.cfg.Console != nil && (path == "/" || strings.HasPrefix(path, "/console/"))
}

// canonicalHost is a Host header as the allowlist compares it: host names
// are case-insensitive and "localhost." is "localhost" (a trailing dot
// only says the name is fully qualified).
func canonicalHost(h string) string {
	h = strings.ToLower(h)
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		return strings.TrimSuffix(h, ".")
	}
	host = strings.TrimSuffix(host, ".")
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + port
}

func remoteIP(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// cors answers for the one configured origin, and handles its preflight;
// it reports whether the request is answered. With no origin configured
// nothing is added and browsers keep their same-origin rule.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if s.cfg.CORSOrigin == "" || origin == "" {
		return false
	}
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	w.Header().Add("Vary", "Origin")
	if origin != s.cfg.CORSOrigin {
		if preflight {
			writeError(w, Error{Error: fmt.Sprintf("origin %q is not allowed", origin), Code: CodeForbidden})
			return true
		}
		return false
	}
	w.Header().Set("Access-Control-Allow-Origin", origin)
	if !preflight {
		w.Header().Set("Access-Control-Expose-Headers", "Retry-After")
		return false
	}
	w.Header().Set("Access-Control-Allow-Methods", "GET, POST")
	w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
	w.Header().Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}
