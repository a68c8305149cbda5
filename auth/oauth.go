package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/internal/safefile"
)

// Credential sources for the claude.ai Sessions API. Each is an
// oauth2.TokenSource; none of them ever puts a token into an error, a String
// or a log value.

// Secret is a credential string: fmt and slog print it as [redacted], always.
type Secret string

func (Secret) String() string                 { return "[redacted]" }
func (Secret) GoString() string               { return "[redacted]" }
func (Secret) LogValue() slog.Value           { return slog.StringValue("[redacted]") }
func (s Secret) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }

// Refreshable is a token source that can be told the server refused a token
// (a 401), so that its next Token call fetches a fresh one instead of
// handing out the refused token again. Invalidate reports whether a fresh
// token can be had at all; a caller retries once only if the token it then
// gets differs from the refused one.
type Refreshable interface {
	oauth2.TokenSource
	Invalidate(refused *oauth2.Token) bool
}

// Errors from the credential sources, to be matched with errors.Is. File
// problems come wrapped in a *FileError naming the path.
var (
	ErrFileMode       = errors.New("readable or writable by group or others (want mode 0600 or stricter)")
	ErrFileSymlink    = safefile.ErrSymlink
	ErrFileNotRegular = safefile.ErrNotRegular
	ErrFileTooLarge   = safefile.ErrTooLarge
	ErrTokenFormat    = errors.New("holds no usable token")
	ErrTokenExpired   = errors.New("token has expired")
	ErrNoRefreshToken = errors.New("auth: no refresh token to renew an expired access token with")
	ErrRefreshConfig  = errors.New("auth: invalid refresh configuration")
)

// FileError is a credentials file that could not be used. It names the path
// and, for a mode problem, the mode; it never quotes the file's content.
type FileError struct {
	Path string
	Mode fs.FileMode // the permission bits, when Err is ErrFileMode
	Err  error
}

func (e *FileError) Error() string {
	if errors.Is(e.Err, ErrFileMode) {
		return fmt.Sprintf("auth: %s has mode %#o, %v; run chmod 600 %s", e.Path, e.Mode.Perm(), e.Err, e.Path)
	}
	return fmt.Sprintf("auth: %s: %v", e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// expirySkew treats a token as expired a little early, as oauth2 does, so a
// request does not leave with a token that lapses on the way.
const expirySkew = 10 * time.Second

func expired(t *oauth2.Token, now time.Time) bool {
	return !t.Expiry.IsZero() && !now.Add(expirySkew).Before(t.Expiry)
}

// headerSafe says whether s can travel as a bearer token: visible ASCII,
// no spaces. It keeps a stray newline in a file from becoming a header
// injection, and a pasted binary blob from becoming a confusing 401.
func headerSafe(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// StaticToken returns a source that always hands out tok as a bearer token.
// It cannot refresh: a 401 is final.
func StaticToken(tok string) oauth2.TokenSource { return staticSource{tok: Secret(tok)} }

type staticSource struct{ tok Secret }

func (s staticSource) Token() (*oauth2.Token, error) {
	if !headerSafe(string(s.tok)) {
		return nil, fmt.Errorf("auth: static token %w: it is empty or holds spaces or control characters", ErrTokenFormat)
	}
	return &oauth2.Token{AccessToken: string(s.tok), TokenType: "Bearer"}, nil
}

func (staticSource) String() string       { return "auth.StaticToken([redacted])" }
func (s staticSource) GoString() string   { return s.String() }
func (staticSource) LogValue() slog.Value { return slog.StringValue("static token [redacted]") }

// MaxTokenFile caps how much of a token or credentials file is read.
const MaxTokenFile = 64 << 10

// TokenFile returns a source that reads its token from path: either a raw
// bearer token (one line; surrounding whitespace ignored) or JSON
// {"access_token", "token_type", "refresh_token", "expiry" | "expires_at"},
// where the expiry is RFC 3339 or seconds (or milliseconds) since the epoch.
// The file is re-read whenever its identity, size or mtime change, so a
// token rotated by another program is picked up without a restart. The file
// must be a regular file, not a symlink, with no permission bits for group
// or others, and at most MaxTokenFile bytes. An expired token is an error:
// this source does not refresh, whoever writes the file does.
func TokenFile(path string) oauth2.TokenSource {
	return &tokenFile{path: path, now: time.Now}
}

type tokenFile struct {
	path string
	now  func() time.Time

	mu  sync.Mutex
	fi  fs.FileInfo // of the file last read; nil before the first read
	tok *oauth2.Token
	err error // the parse error of the file last read
}

func (s *tokenFile) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, fi, err := readSecretFile(s.path, MaxTokenFile, s.fi)
	if err != nil {
		return nil, err
	}
	if b != nil { // changed since the last read
		s.fi = fi
		s.tok, s.err = parseTokenFile(b)
		if s.err != nil {
			s.err = &FileError{Path: s.path, Err: s.err}
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	if expired(s.tok, s.now()) {
		return nil, &FileError{Path: s.path, Err: fmt.Errorf("%w at %s; write a fresh one", ErrTokenExpired, s.tok.Expiry.UTC().Format(time.RFC3339))}
	}
	t := *s.tok
	return &t, nil
}

// Invalidate makes the next Token read the file again even if it looks
// unchanged; a fresh token exists only if someone rewrote the file.
func (s *tokenFile) Invalidate(*oauth2.Token) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fi = nil
	return true
}

func (s *tokenFile) String() string   { return "auth.TokenFile(" + s.path + ")" }
func (s *tokenFile) GoString() string { return s.String() }
func (s *tokenFile) LogValue() slog.Value {
	return slog.GroupValue(slog.String("source", "token-file"), slog.String("path", s.path))
}

// tokenJSON is the JSON a token file may hold: oauth2.Token's own spelling,
// plus expires_at as other tools write it.
type tokenJSON struct {
	AccessToken  string          `json:"access_token"`
	TokenType    string          `json:"token_type"`
	RefreshToken string          `json:"refresh_token"`
	Expiry       json.RawMessage `json:"expiry"`
	ExpiresAt    json.RawMessage `json:"expires_at"`
}

// parseTokenFile reads a token file's content. Its errors describe the
// shape, never the bytes.
func parseTokenFile(b []byte) (*oauth2.Token, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: the file is empty", ErrTokenFormat)
	}
	if b[0] != '{' {
		if !headerSafe(string(b)) {
			return nil, fmt.Errorf("%w: want JSON or a single-line token without spaces or control characters", ErrTokenFormat)
		}
		return &oauth2.Token{AccessToken: string(b), TokenType: "Bearer"}, nil
	}
	var j tokenJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrTokenFormat, jsonProblem(err))
	}
	if !headerSafe(j.AccessToken) {
		return nil, fmt.Errorf("%w: access_token is missing, empty or holds spaces or control characters", ErrTokenFormat)
	}
	if j.RefreshToken != "" && !headerSafe(j.RefreshToken) {
		return nil, fmt.Errorf("%w: refresh_token holds spaces or control characters", ErrTokenFormat)
	}
	raw, name := j.Expiry, "expiry"
	if isNullJSON(raw) {
		raw, name = j.ExpiresAt, "expires_at"
	}
	exp, err := parseExpiry(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrTokenFormat, name, err)
	}
	typ := j.TokenType
	if typ == "" {
		typ = "Bearer"
	} else if !headerSafe(typ) {
		return nil, fmt.Errorf("%w: token_type holds spaces or control characters", ErrTokenFormat)
	}
	return &oauth2.Token{AccessToken: j.AccessToken, TokenType: typ, RefreshToken: j.RefreshToken, Expiry: exp}, nil
}

func isNullJSON(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}

// jsonProblem describes a JSON error by position and kind only: a syntax
// error's text quotes a character of the input, which may be a token's.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("not valid JSON (at byte %d)", syn.Offset)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Sprintf("field %q has the wrong JSON type (%s)", typ.Field, typ.Value)
	}
	return "not valid JSON"
}

// Epoch numbers at or above this are milliseconds: as seconds they would be
// past the year 5000.
const millisThreshold = 1e11

// parseExpiry reads an expiry: absent or null (no expiry), an RFC 3339
// string, or a number of seconds or milliseconds since the epoch (0 = none).
func parseExpiry(raw json.RawMessage) (time.Time, error) {
	if isNullJSON(raw) {
		return time.Time{}, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return time.Time{}, nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, errors.New("not an RFC 3339 time")
		}
		return t, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return time.Time{}, errors.New("neither a time string nor a number")
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f > 1e15 {
		return time.Time{}, errors.New("not a plausible epoch time")
	}
	var t time.Time
	switch {
	case f == 0:
		return time.Time{}, nil
	case f >= millisThreshold:
		t = time.UnixMilli(int64(f))
	default:
		t = time.Unix(int64(f), 0)
	}
	if t.Year() > 9999 { // RFC 3339 cannot spell it
		return time.Time{}, errors.New("not a plausible epoch time")
	}
	return t, nil
}

// readSecretFile reads a credentials file of at most max bytes, refusing a
// symlink, a non-regular file and one with any permission bit for group or
// others. When prev describes the same file, unchanged in size and mtime, it
// returns nil bytes and prev: the caller's parse is still good.
func readSecretFile(path string, max int64, prev fs.FileInfo) ([]byte, fs.FileInfo, error) {
	b, fi, err := safefile.ReadSecret(path, max, prev)
	if err != nil {
		return nil, nil, fileError(path, err)
	}
	return b, fi, nil
}

// fileError names a refused credentials file in auth's terms, keeping the
// mode for the message.
func fileError(path string, err error) *FileError {
	fe := &FileError{Path: path, Err: err}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		fe.Err = pe.Err // FileError names the path itself
	}
	var me *safefile.ModeError
	if errors.As(err, &me) {
		fe.Mode, fe.Err = me.Mode, ErrFileMode
	}
	return fe
}

const tokenTimeout = 30 * time.Second

func checkTokenURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("%w: token URL %q must be http(s)://host/path without credentials", ErrRefreshConfig, raw)
	}
	return nil
}

// refreshOnce trades rt for a new token. The returned token always carries
// a refresh token: the server's rotated one, or rt kept.
func refreshOnce(ctx context.Context, conf *oauth2.Config, rt string) (*oauth2.Token, error) {
	if rt == "" {
		return nil, ErrNoRefreshToken
	}
	// An access-token-less token makes oauth2 refresh at once.
	t, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: rt}).Token()
	if err != nil {
		return nil, refreshError(conf.Endpoint.TokenURL, err)
	}
	if !headerSafe(t.AccessToken) {
		return nil, &RefreshError{TokenURL: conf.Endpoint.TokenURL, Description: "the token endpoint returned an unusable access token"}
	}
	if t.RefreshToken == "" {
		t.RefreshToken = rt
	}
	return t, nil
}

// RefreshError is a failed refresh. It quotes the endpoint's OAuth error
// code and description, never the response body: a broken endpoint could
// echo the refresh token.
type RefreshError struct {
	TokenURL    string
	Status      int    // HTTP status, 0 when no response came
	Code        string // the OAuth "error" field, e.g. invalid_grant
	Description string
	Err         error // the underlying error, for errors.As; not printed when it holds a body
}

func (e *RefreshError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "auth: token refresh at %s failed", e.TokenURL)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Description != "" {
		fmt.Fprintf(&b, ": %s", e.Description)
	}
	var re *oauth2.RetrieveError
	if e.Err != nil && !errors.As(e.Err, &re) {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Code == "invalid_grant" {
		b.WriteString(" (the refresh token was refused: log in again)")
	}
	return b.String()
}

func (e *RefreshError) Unwrap() error { return e.Err }

func refreshError(tokenURL string, err error) error {
	e := &RefreshError{TokenURL: tokenURL, Err: err}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.Response != nil {
			e.Status = re.Response.StatusCode
		}
		e.Code, e.Description = clip(re.ErrorCode), clip(re.ErrorDescription)
	}
	return e
}

// clip keeps an error text from the wire short and printable.
func clip(s string) string {
	const max = 200
	return bounded.Clip(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "")), max)
}
