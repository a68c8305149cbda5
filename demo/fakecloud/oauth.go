package fakecloud

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"
)

// tokenPath is the OAuth token endpoint, as the Claude Code login refreshes
// against it. It is the one path served without credentials.
const tokenPath = "/v1/oauth/token"

// maxForm bounds a token request body: a refresh form is a few hundred bytes.
const maxForm = 64 << 10

// tokenState is what a bearer token is worth.
type tokenState uint8

const (
	tokenUnknown tokenState = iota
	tokenValid
	tokenExpired
)

// tokens holds the OAuth state; s.mu guards it.
type tokens struct {
	refresh       string               // the refresh token that works now
	issued        map[string]time.Time // access token -> expiry
	staticExpired bool                 // Options.Token was expired by ExpireTokens
	refreshes     int
}

// checkToken says whether tok is Options.Token or an issued token, and
// whether it still works.
func (s *Server) checkToken(tok string) tokenState {
	if tok == "" {
		return tokenUnknown
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.Token != "" && tok == s.opts.Token {
		if s.tokens.staticExpired {
			return tokenExpired
		}
		return tokenValid
	}
	exp, ok := s.tokens.issued[tok]
	switch {
	case !ok:
		return tokenUnknown
	case s.clock.Now().Before(exp):
		return tokenValid
	}
	return tokenExpired
}

// ExpireTokens makes every access token issued so far (and Options.Token,
// when Options.TokenExpires is set) answer 401 "OAuth token has expired"
// from now on. The refresh token keeps working, so a client can recover.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok := range s.tokens.issued {
		s.tokens.issued[tok] = time.Time{}
	}
	if s.opts.TokenExpires {
		s.tokens.staticExpired = true
	}
}

// Refreshes returns how many refreshes the token endpoint granted.
func (s *Server) Refreshes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens.refreshes
}

// RefreshToken returns the refresh token that works now (rotated by every
// refresh), so a test can write it where its client looks.
func (s *Server) RefreshToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens.refresh
}

// oauthError answers in RFC 6749's shape, not Anthropic's error envelope:
// OAuth clients (golang.org/x/oauth2) read "error" and "error_description".
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// oauthToken serves the refresh grant of OAuth bearer auth; the path and
// form follow Claude Code's login refresh.
func (s *Server) oauthToken(w http.ResponseWriter, r *http.Request) {
	if s.opts.RefreshToken == "" {
		writeError(w, http.StatusNotFound, "not_found_error", "token endpoint not enabled")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "form: "+err.Error())
		return
	}
	if g := r.PostForm.Get("grant_type"); g != "refresh_token" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "only refresh_token is supported")
		return
	}
	// x/oauth2 sends client_id in the form or as the Basic user, depending
	// on its AuthStyle; both are taken.
	client := r.PostForm.Get("client_id")
	if user, _, ok := r.BasicAuth(); ok && client == "" {
		client = user
	}
	if client == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "client_id is required")
		return
	}
	if s.opts.ClientID != "" && client != s.opts.ClientID {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client_id")
		return
	}
	access, refresh := "fake-at-"+randomHex(), "fake-rt-"+randomHex()
	s.mu.Lock()
	if rt := r.PostForm.Get("refresh_token"); rt == "" || rt != s.tokens.refresh {
		s.mu.Unlock()
		oauthError(w, http.StatusBadRequest, "invalid_grant", "refresh token is invalid or was rotated")
		return
	}
	s.tokens.refresh = refresh
	s.tokens.issued[access] = s.clock.Now().Add(s.opts.TokenLifetime)
	s.tokens.refreshes++
	s.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "refresh_token": refresh, "token_type": "Bearer",
		"expires_in": int64(s.opts.TokenLifetime / time.Second),
	})
}

func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b[:])
}
