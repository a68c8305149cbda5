package sessionsapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/internal/clock"
)

// The headers every request carries
// (docs/protocols/claude-ai-remote.md#request-headers). The beta and feature
// values select the Claude Code Remote surface.
const (
	APIVersion    = "2023-06-01"
	BetaHeader    = "ccr-byoc-2025-07-29"
	ClientFeature = "ccr"

	DefaultClientPlatform = "gateway"
	DefaultVersion        = "0.0.0-dev"
	DefaultMaxAttempts    = 5
	DefaultMaxElapsed     = 2 * time.Minute
	DefaultTimeout        = time.Minute // per attempt, when Options.HTTPClient is nil

	// MaxResponse caps a successful response body; MaxErrorResponse an
	// error one, of which only the message is wanted.
	MaxResponse      = 16 << 20
	MaxErrorResponse = 64 << 10

	instrumentation = "github.com/sessiongateway/gateway/leg/remote/sessionsapi"
)

// Options configures a Client. BaseURL and exactly one of Token and
// SessionKey are required.
type Options struct {
	// BaseURL is http(s)://host[:port], optionally with a path prefix.
	BaseURL string
	// OrgUUID is sent as x-organization-uuid and names the organisation in
	// the environment paths.
	OrgUUID string
	// Token supplies OAuth bearer tokens (see package auth). If it also
	// implements auth.Refreshable, a 401 makes it refresh once.
	Token oauth2.TokenSource
	// SessionKey is the claude.ai web cookie value, sent as sessionKey=...
	SessionKey string
	// Signer attests every posted event; nil is auth.NewNoneSigner().
	Signer auth.Signer
	// HTTPClient makes the requests; nil is one with a DefaultTimeout. The
	// client keeps a copy that never follows redirects (see noRedirects).
	HTTPClient *http.Client
	// ClientPlatform and Version are sent as anthropic-client-platform and
	// anthropic-client-version.
	ClientPlatform string
	Version        string
	// MaxAttempts bounds the sends of one request (DefaultMaxAttempts);
	// MaxElapsed bounds the time spent retrying it (DefaultMaxElapsed).
	MaxAttempts int
	MaxElapsed  time.Duration
	// Propagator injects traceparent; nil is the OTel global one at each
	// request. TracerProvider makes a span per operation; nil is the global.
	Propagator     propagation.TextMapPropagator
	TracerProvider trace.TracerProvider
	// Logger receives a line per retry; nil discards.
	Logger *slog.Logger
	// Clock times the retries; nil is the real clock.
	Clock clock.Clock
}

// LogValue keeps the session key out of logs.
func (o Options) LogValue() slog.Value {
	return slog.GroupValue(slog.String("base_url", o.BaseURL), slog.String("org", o.OrgUUID),
		slog.Bool("token", o.Token != nil), slog.Bool("session_key", o.SessionKey != ""))
}

// Client talks to the Sessions API. It is safe for concurrent use and holds
// no goroutines.
type Client struct {
	base       *url.URL
	org        string
	token      oauth2.TokenSource
	sessionKey auth.Secret
	signer     auth.Signer
	hc         *http.Client
	platform   string
	version    string
	attempts   int
	elapsed    time.Duration
	prop       propagation.TextMapPropagator
	tp         trace.TracerProvider
	log        *slog.Logger
	clock      clock.Clock
}

// New checks o and returns a client.
func New(o Options) (*Client, error) {
	base, err := parseBaseURL(o.BaseURL)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Token != nil && o.SessionKey != "":
		return nil, fmt.Errorf("sessionsapi: %w: set a token source or a session key, not both", ErrConfig)
	case o.Token == nil && o.SessionKey == "":
		return nil, fmt.Errorf("sessionsapi: %w: no credentials: set a token source or a session key", ErrConfig)
	case o.SessionKey != "" && !cookieSafe(o.SessionKey):
		return nil, fmt.Errorf("sessionsapi: %w: the session key holds characters a cookie cannot carry", ErrConfig)
	case strings.ContainsAny(o.OrgUUID, "/?#%\r\n ") || !headerValueSafe(o.OrgUUID):
		return nil, fmt.Errorf("sessionsapi: %w: organisation uuid %q is not a plain identifier", ErrConfig, o.OrgUUID)
	}
	c := &Client{
		base: base, org: o.OrgUUID, token: o.Token, sessionKey: auth.Secret(o.SessionKey),
		signer: o.Signer, hc: o.HTTPClient, platform: o.ClientPlatform, version: o.Version,
		attempts: o.MaxAttempts, elapsed: o.MaxElapsed, prop: o.Propagator, tp: o.TracerProvider,
		log: o.Logger, clock: o.Clock,
	}
	if c.signer == nil {
		c.signer = auth.NewNoneSigner()
	}
	c.hc = noRedirects(c.hc)
	if c.platform == "" {
		c.platform = DefaultClientPlatform
	}
	if c.version == "" {
		c.version = DefaultVersion
	}
	if !headerValueSafe(c.platform) || !headerValueSafe(c.version) {
		return nil, fmt.Errorf("sessionsapi: %w: client platform and version must be printable ASCII", ErrConfig)
	}
	if c.attempts <= 0 {
		c.attempts = DefaultMaxAttempts
	}
	if c.elapsed <= 0 {
		c.elapsed = DefaultMaxElapsed
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.clock = clock.Or(c.clock)
	return c, nil
}

// noRedirects returns a copy of hc (or a new client with DefaultTimeout)
// that hands a 3xx back as it is. Following one would resend a POST as a
// bodiless GET, whose 2xx would read as a post the server accepted, and
// would carry the credentials to wherever the Location points (another
// scheme or port of the same host keeps them).
func noRedirects(hc *http.Client) *http.Client {
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	cp := *hc
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cp
}

func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("sessionsapi: %w: base URL %q must be http(s)://host[:port]", ErrConfig, raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("sessionsapi: %w: base URL must have no credentials, query or fragment", ErrConfig)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// cookieSafe says whether s is a cookie-octet string (RFC 6265 section 4.1.1),
// so it cannot end the cookie or smuggle another header.
func cookieSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return s != ""
}

func headerValueSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// BaseURL is the service's base URL, without a trailing slash.
func (c *Client) BaseURL() string { return c.base.String() }

// OrgUUID is the organisation the client acts for.
func (c *Client) OrgUUID() string { return c.org }

func (c *Client) propagator() propagation.TextMapPropagator {
	if c.prop != nil {
		return c.prop
	}
	return otel.GetTextMapPropagator()
}

func (c *Client) tracer() trace.Tracer {
	tp := c.tp
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(instrumentation)
}

// setHeaders writes the anthropic-* headers, the organisation, the
// credentials and the trace context of ctx into h. It returns the token it
// used (nil with a session key), so that a 401 can invalidate exactly it.
func (c *Client) setHeaders(ctx context.Context, h http.Header) (*oauth2.Token, error) {
	h.Set("anthropic-version", APIVersion)
	h.Set("anthropic-beta", BetaHeader)
	h.Set("anthropic-client-feature", ClientFeature)
	h.Set("anthropic-client-platform", c.platform)
	h.Set("anthropic-client-version", c.version)
	h.Set("User-Agent", "sessiongateway/"+c.version)
	if c.org != "" {
		h.Set("x-organization-uuid", c.org)
	}
	var tok *oauth2.Token
	if c.token != nil {
		t, err := c.token.Token()
		if err != nil {
			return nil, fmt.Errorf("getting a token: %w", err)
		}
		if t == nil || !headerValueSafe(t.AccessToken) || t.AccessToken == "" || strings.ContainsAny(t.AccessToken, " ") {
			return nil, fmt.Errorf("getting a token: %w: the token source returned an unusable token", ErrConfig)
		}
		h.Set("Authorization", t.Type()+" "+t.AccessToken)
		tok = t
	} else {
		h.Set("Cookie", "sessionKey="+string(c.sessionKey))
	}
	c.propagator().Inject(ctx, propagation.HeaderCarrier(h))
	return tok, nil
}

// StreamHeader returns the headers a WebSocket dial or an SSE GET needs:
// credentials, the anthropic-* headers, x-organization-uuid and the
// traceparent of ctx's span. Call it for every dial: tokens expire.
func (c *Client) StreamHeader(ctx context.Context) (http.Header, error) {
	h := http.Header{}
	if _, err := c.setHeaders(ctx, h); err != nil {
		return nil, fmt.Errorf("sessionsapi: StreamHeader: %w", err)
	}
	return h, nil
}

// RefreshCredentials is for a stream whose dial was refused with 401 using
// refused (a header from StreamHeader): it makes a refreshable token source
// drop that token and reports whether the next StreamHeader will carry a
// different one. A session key or a static token cannot be refreshed.
func (c *Client) RefreshCredentials(refused http.Header) bool {
	r, ok := c.token.(auth.Refreshable)
	if !ok {
		return false
	}
	_, old, ok := strings.Cut(refused.Get("Authorization"), " ")
	if !ok {
		return false
	}
	return c.refreshed(r, &oauth2.Token{AccessToken: old})
}

// refreshed invalidates old and reports whether the source now yields a
// token other than old.
func (c *Client) refreshed(r auth.Refreshable, old *oauth2.Token) bool {
	if old == nil || !r.Invalidate(old) {
		return false
	}
	t, err := r.Token()
	return err == nil && t != nil && t.AccessToken != old.AccessToken
}
