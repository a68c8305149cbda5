package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// Claude Code's public OAuth client, as public builds of the CLI carry it
// (not verified against the live service from here). Its token endpoint is
// believed to prefer a JSON body; oauth2 sends a form, which the fake and
// standard OAuth servers take.
const (
	ClaudeCodeClientID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
	ClaudeCodeTokenURL = "https://console.anthropic.com/v1/oauth/token"
)

// ErrCredentialsFormat is a Claude Code credentials file without the
// claudeAiOauth object or its access token.
var ErrCredentialsFormat = errors.New("is not a Claude Code credentials file (want {\"claudeAiOauth\":{\"accessToken\",...}})")

// DefaultClaudeCodeCredentialsPath is where Claude Code keeps its login on
// Linux: $CLAUDE_CONFIG_DIR/.credentials.json, else ~/.claude/.credentials.json.
// (On macOS Claude Code uses the Keychain and this file may not exist.)
func DefaultClaudeCodeCredentialsPath() (string, error) {
	if dir := os.Getenv("CLAUDE_CONFIG_DIR"); dir != "" {
		return filepath.Join(dir, ".credentials.json"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("auth: finding Claude Code's credentials: %w", err)
	}
	return filepath.Join(home, ".claude", ".credentials.json"), nil
}

// claudeFile is the part of ~/.claude/.credentials.json we read.
type claudeFile struct {
	ClaudeAiOauth *struct {
		AccessToken      string   `json:"accessToken"`
		RefreshToken     string   `json:"refreshToken"`
		ExpiresAt        *int64   `json:"expiresAt"` // milliseconds since the epoch
		Scopes           []string `json:"scopes"`
		SubscriptionType string   `json:"subscriptionType"`
	} `json:"claudeAiOauth"`
}

// parseClaudeCredentials reads Claude Code's credentials file. Its errors
// describe the shape, never the bytes.
func parseClaudeCredentials(b []byte) (*oauth2.Token, error) {
	var f claudeFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrCredentialsFormat, jsonProblem(err))
	}
	o := f.ClaudeAiOauth
	if o == nil {
		return nil, fmt.Errorf("%w: no claudeAiOauth object", ErrCredentialsFormat)
	}
	if !headerSafe(o.AccessToken) {
		return nil, fmt.Errorf("%w: accessToken is missing, empty or holds spaces or control characters", ErrCredentialsFormat)
	}
	if o.RefreshToken != "" && !headerSafe(o.RefreshToken) {
		return nil, fmt.Errorf("%w: refreshToken holds spaces or control characters", ErrCredentialsFormat)
	}
	t := &oauth2.Token{AccessToken: o.AccessToken, TokenType: "Bearer", RefreshToken: o.RefreshToken}
	if o.ExpiresAt != nil && *o.ExpiresAt > 0 {
		t.Expiry = time.UnixMilli(*o.ExpiresAt)
	}
	return t.WithExtra(map[string]any{"scopes": o.Scopes, "subscriptionType": o.SubscriptionType}), nil
}

// ClaudeCodeCredentials reuses an existing Claude Code login, by explicit
// choice of the user: it reads path (DefaultClaudeCodeCredentialsPath when
// empty), which must be a regular 0600-or-stricter file, and hands out its
// access token. The file is Claude Code's and is never written. When the
// token has expired (or the server refused it) the file is read again first,
// since Claude Code may have refreshed it; only if it is still expired is
// the refresh token traded at tokenURL (ClaudeCodeTokenURL when empty) with
// ClaudeCodeClientID, and the new token kept in memory only.
//
// Beware: if the server rotates refresh tokens, our refresh spends the one
// in the file and Claude Code will have to log in again. That is why the
// file is always preferred and a refresh happens only when it is stale.
//
// The file is read once here, so a missing or malformed login is reported
// at start rather than at the first request.
func ClaudeCodeCredentials(path, tokenURL string) (oauth2.TokenSource, error) {
	if path == "" {
		p, err := DefaultClaudeCodeCredentialsPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	if tokenURL == "" {
		tokenURL = ClaudeCodeTokenURL
	}
	if err := checkTokenURL(tokenURL); err != nil {
		return nil, err
	}
	s := &claudeSource{
		path: path,
		now:  time.Now,
		ctx:  context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Timeout: tokenTimeout}),
		conf: &oauth2.Config{ClientID: ClaudeCodeClientID,
			Endpoint: oauth2.Endpoint{TokenURL: tokenURL, AuthStyle: oauth2.AuthStyleInParams}},
	}
	if err := s.reread(); err != nil {
		return nil, err
	}
	return s, nil
}

type claudeSource struct {
	path string
	now  func() time.Time
	ctx  context.Context // carries the token requests' HTTP client
	conf *oauth2.Config

	mu      sync.Mutex // held across a refresh, so concurrent callers refresh once
	fi      fs.FileInfo
	file    *oauth2.Token // as last read from the file
	mem     *oauth2.Token // our own refresh; nil when the file's token is current
	memFrom string        // the file's refresh token mem was made from
	refused string        // an access token the server refused
}

func (s *claudeSource) usable(t *oauth2.Token) bool {
	return t != nil && t.AccessToken != s.refused && !expired(t, s.now())
}

func (s *claudeSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.file
	if s.mem != nil {
		cur = s.mem
	}
	if s.usable(cur) {
		return copyToken(cur), nil
	}
	// Stale or refused: Claude Code may have refreshed the file meanwhile.
	if err := s.reread(); err != nil {
		return nil, err
	}
	if s.usable(s.file) {
		s.mem = nil
		return copyToken(s.file), nil
	}
	// Still stale: refresh in memory. A refresh token we were given by a
	// rotation supersedes the file's, as long as the file has not changed.
	rt := s.file.RefreshToken
	if s.mem != nil && s.memFrom == rt {
		rt = s.mem.RefreshToken
	}
	if rt == "" {
		return nil, &FileError{Path: s.path, Err: ErrNoRefreshToken}
	}
	t, err := refreshOnce(s.ctx, s.conf, rt)
	if err != nil {
		return nil, err
	}
	s.mem, s.memFrom = t, s.file.RefreshToken
	return copyToken(t), nil
}

// reread reads the file if it changed; s.mu must be held (or s unshared).
func (s *claudeSource) reread() error {
	b, fi, err := readSecretFile(s.path, MaxTokenFile, s.fi)
	if err != nil {
		return err
	}
	if b == nil {
		return nil
	}
	t, err := parseClaudeCredentials(b)
	if err != nil {
		return &FileError{Path: s.path, Err: err}
	}
	s.fi, s.file = fi, t
	return nil
}

// Invalidate marks refused as unusable: the next Token reads the file again
// and, if that holds nothing newer, refreshes.
func (s *claudeSource) Invalidate(refused *oauth2.Token) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if refused != nil {
		s.refused = refused.AccessToken
	}
	return true
}

func (s *claudeSource) String() string   { return "auth.ClaudeCodeCredentials(" + s.path + ")" }
func (s *claudeSource) GoString() string { return s.String() }
func (s *claudeSource) LogValue() slog.Value {
	return slog.GroupValue(slog.String("source", "claude-code"), slog.String("path", s.path),
		slog.String("token_url", s.conf.Endpoint.TokenURL))
}

func copyToken(t *oauth2.Token) *oauth2.Token {
	c := *t
	return &c
}
