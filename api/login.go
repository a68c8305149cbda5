package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Browser sessions: a browser presents a scoped token or a one-time pairing
// code once (POST /v1/login) and then holds an HttpOnly, SameSite=Strict
// cookie. A request authenticated by the cookie that changes state must
// also carry the session's CSRF token in X-CSRF-Token, which only a page
// of the gateway's own origin can read (GET /v1/login). Sessions and
// pairings live in memory: a restart signs every browser out.
const (
	// SessionCookie names the browser session cookie.
	SessionCookie = "gateway_session"
	// CSRFHeader carries the session's CSRF token on state-changing requests.
	CSRFHeader = "X-CSRF-Token"
	// SessionTTL is how long a browser session lasts.
	SessionTTL = 12 * time.Hour
	// MaxPairingTTL caps a pairing link's life.
	MaxPairingTTL      = 24 * time.Hour
	defaultPairingTTL  = 10 * time.Minute
	maxBrowserSessions = 256 // past it, the oldest session of the credential holding most is signed out
	maxPairings        = 32  // open pairings opened over TCP; past it, new ones are refused until some expire
	// A credential's share: past it, its own oldest session is signed out
	// and its new pairings are refused, so one token cannot sign other
	// browsers out or lock gateway pair out. The control socket has its own
	// maxPairings, never taken by a token's.
	sessionShare = maxBrowserSessions / 4
	pairingShare = maxPairings / 4
)

// LoginBody is the body of POST /v1/login: a bearer token or a pairing
// code (the part after #pair= in a pairing URL), exactly one.
type LoginBody struct {
	Token   string `json:"token,omitempty"`
	Pairing string `json:"pairing,omitempty"`
}

// LoginInfo answers POST and GET /v1/login: who the browser is signed in as
// and the CSRF token its state-changing requests must carry.
type LoginInfo struct {
	Label     string    `json:"label"`
	Scopes    string    `json:"scopes"`
	CSRFToken string    `json:"csrf_token,omitempty"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// PairBody is the body of POST /v1/pairings.
type PairBody struct {
	// Scopes the paired browser gets beside read, comma-separated; each
	// must be one the caller holds.
	Scopes string `json:"scopes,omitempty"`
	// TTL is how long the link works, a Go duration (default 10m, at most 24h).
	TTL string `json:"ttl,omitempty"`
}

// Pairing answers POST /v1/pairings: a one-time link that signs a browser
// in. Code is shown only here.
type Pairing struct {
	Code      string    `json:"code"`
	URL       string    `json:"url"`
	Scopes    string    `json:"scopes"`
	ExpiresAt time.Time `json:"expires_at"`
}

// parent is the credential a browser session or pairing descends from:
// a bearer token, re-verified on each use so that removing it signs out
// every browser it signed in or paired, however many links down; or the
// control socket (no token), which only a restart revokes.
type parent struct {
	token string // "" for the control socket
	owner string // the grant ID its shares are counted to
}

const socketOwner = "unix"

type parentKey struct{}

func withParent(ctx context.Context, p parent) context.Context {
	return context.WithValue(ctx, parentKey{}, p)
}

// parentOf is the credential a TCP request authenticated with: its
// session's parent, or its bearer token.
func parentOf(r *http.Request, sess *browserSession, g Grant) parent {
	if sess != nil {
		return sess.parent
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return parent{token: tok, owner: g.ID}
}

type browserSession struct {
	grant   Grant
	parent  parent
	csrf    string
	seq     uint64 // sign-in order: the oldest is signed out first
	expires time.Time
}

type pairingRec struct {
	parent  parent
	scopes  Scopes
	label   string
	expires time.Time
}

// browserAuth holds the sessions and pairings, keyed by the SHA-256 of
// their secrets so a memory dump holds no usable cookie.
type browserAuth struct {
	mu       sync.Mutex
	sessions map[string]*browserSession
	pairings map[string]pairingRec
	seq      uint64
}

func secret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b)
}

func key(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// errPairing is what a used, expired or unknown pairing code gets: the
// three are not told apart, so a guess learns nothing.
var errPairing = errors.New("this pairing link is used, expired or unknown: run gateway pair again")

// sessionFor returns the live session of a request's cookie.
func (s *Server) sessionFor(r *http.Request) (*browserSession, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || len(c.Value) != 64 {
		return nil, false
	}
	now := s.cfg.Clock.Now()
	s.browser.mu.Lock()
	sess, ok := s.browser.sessions[key(c.Value)]
	if ok && !now.Before(sess.expires) {
		delete(s.browser.sessions, key(c.Value))
		ok = false
	}
	s.browser.mu.Unlock()
	if !ok {
		return nil, false
	}
	cp := *sess // its fields never change; the copy takes the parent's current scopes
	if sess.parent.token != "" {
		g, still := s.verifyToken(sess.parent.token)
		if !still {
			return nil, false
		}
		cp.grant.Scopes &= g.Scopes
	}
	return &cp, true
}

// checkBrowser guards a cookie-authenticated request: a state change needs
// the session's CSRF token, and a request naming a foreign Origin is
// refused whatever its method. It reports whether the request may go on.
func (s *Server) checkBrowser(w http.ResponseWriter, r *http.Request, sess *browserSession) bool {
	if o := r.Header.Get("Origin"); o != "" && !s.sameOrigin(o, r) {
		writeError(w, Error{Error: fmt.Sprintf("origin %q is not this gateway's", o), Code: CodeForbidden})
		return false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return true
	}
	if got := r.Header.Get(CSRFHeader); subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) != 1 {
		writeError(w, Error{Error: "missing or wrong " + CSRFHeader + " header (GET /v1/login gives it)", Code: CodeForbidden})
		return false
	}
	return true
}

func (s *Server) sameOrigin(origin string, r *http.Request) bool {
	if origin == s.cfg.CORSOrigin {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && canonicalHost(u.Host) == canonicalHost(r.Host)
}

// login signs a browser in with a token or a pairing code and sets the
// session cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var b LoginBody
	if err := decode(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	if (b.Token == "") == (b.Pairing == "") {
		s.fail(w, errBadRequest(`give exactly one of "token" and "pairing"`))
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !s.sameOrigin(o, r) {
		writeError(w, Error{Error: fmt.Sprintf("origin %q is not this gateway's", o), Code: CodeForbidden})
		return
	}
	now := s.cfg.Clock.Now()
	sess := &browserSession{csrf: secret(), expires: now.Add(SessionTTL)}
	if b.Token != "" {
		g, ok := s.verifyToken(b.Token)
		if !ok {
			writeError(w, Error{Error: "wrong token", Code: CodeUnauth})
			return
		}
		sess.grant, sess.parent = g, parent{token: b.Token, owner: g.ID}
	} else {
		s.browser.mu.Lock()
		p, ok := s.browser.pairings[key(b.Pairing)]
		delete(s.browser.pairings, key(b.Pairing)) // once, whatever happens next
		s.browser.mu.Unlock()
		scopes := p.scopes
		if ok && p.parent.token != "" { // the token that paired must still be valid
			var g Grant
			g, ok = s.verifyToken(p.parent.token)
			scopes &= g.Scopes
		}
		if !ok || !now.Before(p.expires) {
			writeError(w, Error{Error: errPairing.Error(), Code: CodeUnauth})
			return
		}
		sess.grant = Grant{ID: "pair_" + key(b.Pairing)[:8], Label: p.label, Scopes: scopes}
		sess.parent = p.parent
	}
	cookie := secret()
	s.browser.mu.Lock()
	s.makeRoom(sess.parent.owner, now)
	s.browser.seq++
	sess.seq = s.browser.seq
	s.browser.sessions[key(cookie)] = sess
	s.browser.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: cookie, Path: s.cfg.Prefix + "/", HttpOnly: true,
		Secure: r.TLS != nil || s.cfg.TLS != nil, SameSite: http.SameSiteStrictMode, MaxAge: int(SessionTTL / time.Second)})
	writeJSON(w, http.StatusCreated, LoginInfo{Label: sess.grant.Label, Scopes: sess.grant.Scopes.String(), CSRFToken: sess.csrf, ExpiresAt: sess.expires.UTC()})
}

// whoami tells the caller its grant, and a browser its CSRF token: a page of
// another origin cannot read the answer.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	g, _ := GrantFrom(r.Context())
	info := LoginInfo{Label: g.Label, Scopes: g.Scopes.String()}
	if sess, ok := s.sessionFor(r); ok && r.Header.Get("Authorization") == "" {
		info.CSRFToken, info.ExpiresAt = sess.csrf, sess.expires.UTC()
	}
	writeJSON(w, http.StatusOK, info)
}

// logout ends the browser session of the request's cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		s.browser.mu.Lock()
		delete(s.browser.sessions, key(c.Value))
		s.browser.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: s.cfg.Prefix + "/", HttpOnly: true,
		Secure: r.TLS != nil || s.cfg.TLS != nil, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}

// pair mints a one-time pairing link. The browser it signs in gets read and
// the asked scopes, never more than the caller holds.
func (s *Server) pair(w http.ResponseWriter, r *http.Request) {
	var b PairBody
	if err := decode(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	scopes := Scopes(1 << ScopeRead)
	if strings.TrimSpace(b.Scopes) != "" {
		extra, err := ParseScopes(b.Scopes)
		if err != nil {
			s.fail(w, errBadRequest(err.Error()))
			return
		}
		scopes |= extra
	}
	g, _ := GrantFrom(r.Context())
	par, known := r.Context().Value(parentKey{}).(parent)
	if !known { // fail closed: every listener says who is asking
		writeError(w, Error{Error: "no credential to pair from", Code: CodeForbidden})
		return
	}
	if scopes&^g.Scopes != 0 {
		writeError(w, Error{Error: fmt.Sprintf("a pairing cannot grant more than the caller holds (%s)", g.Scopes), Code: CodeForbidden})
		return
	}
	ttl := defaultPairingTTL
	if b.TTL != "" {
		d, err := time.ParseDuration(b.TTL)
		if err != nil || d <= 0 || d > MaxPairingTTL {
			s.fail(w, errBadRequest(fmt.Sprintf(`"ttl" %q: want a Go duration up to %s`, b.TTL, MaxPairingTTL)))
			return
		}
		ttl = d
	}
	now := s.cfg.Clock.Now()
	code := secret()
	s.browser.mu.Lock()
	full := s.pairingsFull(par.owner, now)
	if full == "" {
		s.browser.pairings[key(code)] = pairingRec{parent: par, scopes: scopes, label: "paired " + now.UTC().Format("2006-01-02 15:04"), expires: now.Add(ttl)}
	}
	s.browser.mu.Unlock()
	if full != "" {
		writeError(w, Error{Error: full + "; wait for some to expire (gateway pair on the gateway's host is never refused for a token's)", Code: CodeConflict})
		return
	}
	writeJSON(w, http.StatusCreated, Pairing{Code: code, URL: s.ConsoleURL() + "#pair=" + code, Scopes: scopes.String(), ExpiresAt: now.Add(ttl).UTC()})
}

// makeRoom signs a session out if owner's new one would pass its share
// (its own oldest) or the total (the oldest of the credential holding
// most). Called with s.browser.mu held.
func (s *Server) makeRoom(owner string, now time.Time) {
	held := map[string]int{}
	for k, v := range s.browser.sessions {
		if !now.Before(v.expires) {
			delete(s.browser.sessions, k)
			continue
		}
		held[v.parent.owner]++
	}
	from := owner
	if held[owner] < sessionShare {
		if len(s.browser.sessions) < maxBrowserSessions {
			return
		}
		for o, n := range held {
			if n > held[from] {
				from = o
			}
		}
	}
	var oldest string
	for k, v := range s.browser.sessions {
		if v.parent.owner == from && (oldest == "" || v.seq < s.browser.sessions[oldest].seq) {
			oldest = k
		}
	}
	delete(s.browser.sessions, oldest)
}

// pairingsFull says why owner may not open another pairing now, or "".
// Called with s.browser.mu held.
func (s *Server) pairingsFull(owner string, now time.Time) string {
	mine, tcp := 0, 0
	for k, p := range s.browser.pairings {
		switch {
		case !now.Before(p.expires):
			delete(s.browser.pairings, k)
			continue
		case p.parent.owner == owner:
			mine++
		}
		if p.parent.owner != socketOwner {
			tcp++
		}
	}
	switch {
	case owner == socketOwner && mine >= maxPairings:
		return fmt.Sprintf("%d pairing links of the control socket are already open", maxPairings)
	case owner == socketOwner:
		return ""
	case mine >= pairingShare:
		return fmt.Sprintf("this credential already has %d pairing links open", pairingShare)
	case tcp >= maxPairings:
		return fmt.Sprintf("%d pairing links are already open", maxPairings)
	}
	return ""
}

// ConsoleURL is where the console is reached on the TCP listener, ending in
// "/": its address, or the first --allow-host when it listens on every
// interface, and --api-prefix; "/" before the listener is up or without one.
func (s *Server) ConsoleURL() string {
	addr, _ := s.tcpAddr.Load().(string)
	if addr == "" {
		return "/"
	}
	host, port, err := net.SplitHostPort(addr)
	if err == nil && (host == "" || net.ParseIP(host).IsUnspecified()) {
		if len(s.cfg.AllowedHosts) > 0 {
			addr = s.cfg.AllowedHosts[0]
		} else {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
	}
	scheme := "http"
	if s.cfg.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + addr + s.cfg.Prefix + "/"
}
