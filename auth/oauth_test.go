package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// A token distinctive enough that finding it in any error or log line
// means it leaked.
const secretTok = "sk-ant-oat01-SECRETSECRETSECRET-0123456789"

func writeFile(t *testing.T, path, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile's mode is masked by umask
		t.Fatal(err)
	}
}

func noLeak(t *testing.T, what string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(what, s) {
			t.Fatalf("a secret leaked into %q", what)
		}
	}
}

func TestTokenFileReads(t *testing.T) {
	future := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	tests := []struct {
		name    string
		content string
		want    oauth2.Token
	}{
		{"a raw token is a bearer token", secretTok, oauth2.Token{AccessToken: secretTok, TokenType: "Bearer"}},
		{"a raw token's trailing newline is ignored", "  " + secretTok + "\n", oauth2.Token{AccessToken: secretTok, TokenType: "Bearer"}},
		{"JSON with an RFC 3339 expiry is read whole",
			`{"access_token":"` + secretTok + `","refresh_token":"rt","token_type":"bearer","expiry":"` + future.Format(time.RFC3339) + `"}`,
			oauth2.Token{AccessToken: secretTok, TokenType: "bearer", RefreshToken: "rt", Expiry: future}},
		{"JSON with expires_at in seconds is read",
			fmt.Sprintf(`{"access_token":"%s","expires_at":%d}`, secretTok, future.Unix()),
			oauth2.Token{AccessToken: secretTok, TokenType: "Bearer", Expiry: future}},
		{"JSON with expires_at in milliseconds is read",
			fmt.Sprintf(`{"access_token":"%s","expires_at":%d}`, secretTok, future.UnixMilli()),
			oauth2.Token{AccessToken: secretTok, TokenType: "Bearer", Expiry: future}},
		{"JSON with a null expiry never expires", `{"access_token":"` + secretTok + `","expiry":null,"expires_in":3600}`,
			oauth2.Token{AccessToken: secretTok, TokenType: "Bearer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "token")
			writeFile(t, path, tt.content, 0o600)
			got, err := TokenFile(path).Token()
			if err != nil {
				t.Fatal(err)
			}
			if got.AccessToken != tt.want.AccessToken || got.TokenType != tt.want.TokenType ||
				got.RefreshToken != tt.want.RefreshToken || !got.Expiry.Equal(tt.want.Expiry) {
				t.Fatalf("got %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestTokenFileRefuses(t *testing.T) {
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  error
		text  string // the error must say this
	}{
		{"a group-readable file is refused with its mode", func(t *testing.T, p string) { writeFile(t, p, secretTok, 0o640) }, ErrFileMode, "0640"},
		{"a world-readable file is refused with its mode", func(t *testing.T, p string) { writeFile(t, p, secretTok, 0o604) }, ErrFileMode, "chmod 600"},
		{"a symlink is refused even to a good file", func(t *testing.T, p string) {
			target := p + ".real"
			writeFile(t, target, secretTok, 0o600)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, ErrFileSymlink, "symlink"},
		{"a directory is refused", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, ErrFileNotRegular, "regular"},
		{"a file over the cap is refused", func(t *testing.T, p string) { writeFile(t, p, strings.Repeat("a", MaxTokenFile+1), 0o600) }, ErrFileTooLarge, "too large"},
		{"a missing file says so", func(t *testing.T, p string) {}, fs.ErrNotExist, "no such file"},
		{"an empty file holds no token", func(t *testing.T, p string) { writeFile(t, p, "\n", 0o600) }, ErrTokenFormat, "empty"},
		{"two lines are not a token", func(t *testing.T, p string) { writeFile(t, p, secretTok+"\n"+secretTok, 0o600) }, ErrTokenFormat, "single-line"},
		{"a token with a space is not a token", func(t *testing.T, p string) { writeFile(t, p, "Bearer "+secretTok, 0o600) }, ErrTokenFormat, "single-line"},
		{"JSON without access_token holds no token", func(t *testing.T, p string) { writeFile(t, p, `{"refresh_token":"`+secretTok+`"}`, 0o600) }, ErrTokenFormat, "access_token"},
		{"broken JSON is reported by offset, not content", func(t *testing.T, p string) { writeFile(t, p, `{"access_token":"`+secretTok, 0o600) }, ErrTokenFormat, "at byte"},
		{"a wrongly typed field is named", func(t *testing.T, p string) { writeFile(t, p, `{"access_token":12}`, 0o600) }, ErrTokenFormat, "access_token"},
		{"a garbled expiry is refused", func(t *testing.T, p string) {
			writeFile(t, p, `{"access_token":"`+secretTok+`","expiry":"tomorrow"}`, 0o600)
		}, ErrTokenFormat, "expiry"},
		{"an expired token is refused with its expiry", func(t *testing.T, p string) {
			writeFile(t, p, `{"access_token":"`+secretTok+`","expiry":"`+past+`"}`, 0o600)
		}, ErrTokenExpired, past},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "token")
			tt.setup(t, path)
			_, err := TokenFile(path).Token()
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, tt.text) {
				t.Fatalf("error %q does not name %s and say %q", msg, path, tt.text)
			}
			noLeak(t, msg, secretTok)
		})
	}
}

func TestTokenFileFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	writeFile(t, path, "tok-1", 0o600)
	src := TokenFile(path)
	want := func(tok string) {
		t.Helper()
		got, err := src.Token()
		if err != nil {
			t.Fatal(err)
		}
		if got.AccessToken != tok {
			t.Fatalf("got token %q, want %q", got.AccessToken, tok)
		}
	}
	want("tok-1")

	t.Run("a file replaced by rename is read again", func(t *testing.T) {
		tmp := filepath.Join(dir, "token.tmp")
		writeFile(t, tmp, "tok-2", 0o600)
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		want("tok-2")
	})
	t.Run("a file rewritten in place with a new mtime is read again", func(t *testing.T) {
		writeFile(t, path, "tok-3", 0o600)
		later := time.Now().Add(time.Minute)
		if err := os.Chtimes(path, later, later); err != nil {
			t.Fatal(err)
		}
		want("tok-3")
	})
	t.Run("a file that looks unchanged is not read again until invalidated", func(t *testing.T) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, "tok-4", 0o600) // same size, then the old mtime back
		if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		want("tok-3")
		if !src.(Refreshable).Invalidate(&oauth2.Token{AccessToken: "tok-3"}) {
			t.Fatal("a token file says it cannot be refreshed")
		}
		want("tok-4")
	})
	t.Run("a chmod to group-readable is refused on the next read", func(t *testing.T) {
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := src.Token(); !errors.Is(err, ErrFileMode) {
			t.Fatalf("got %v, want ErrFileMode", err)
		}
	})
}

func TestStaticToken(t *testing.T) {
	tests := []struct {
		name    string
		tok     string
		wantErr bool
	}{
		{"a token is handed out as a bearer token", secretTok, false},
		{"an empty token is an error", "", true},
		{"a token with a newline is an error", secretTok + "\r\nX-Evil: 1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StaticToken(tt.tok).Token()
			if tt.wantErr {
				if !errors.Is(err, ErrTokenFormat) {
					t.Fatalf("got %v, want ErrTokenFormat", err)
				}
				noLeak(t, err.Error(), secretTok)
				return
			}
			if err != nil || got.AccessToken != tt.tok || got.Type() != "Bearer" {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}

func TestNothingHoldingATokenPrintsIt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	writeFile(t, path, secretTok, 0o600)
	credsPath := filepath.Join(dir, "creds.json")
	writeFile(t, credsPath, claudeJSON(secretTok, secretTok+"-rt", time.Now().Add(time.Hour)), 0o600)
	claude, err := ClaudeCodeCredentials(credsPath, "http://127.0.0.1:1/token")
	if err != nil {
		t.Fatal(err)
	}
	file := TokenFile(path)
	if _, err := file.Token(); err != nil { // so that it holds the token
		t.Fatal(err)
	}
	if _, err := claude.Token(); err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"a Secret":                  Secret(secretTok),
		"a static token":            StaticToken(secretTok),
		"a token file":              file,
		"a Claude Code login":       claude,
		"a struct holding a Secret": struct{ Key Secret }{Secret(secretTok)},
	}
	for name, v := range values {
		t.Run(name+" is redacted by fmt and slog", func(t *testing.T) {
			for _, verb := range []string{"%s", "%v", "%+v", "%#v", "%q"} {
				noLeak(t, fmt.Sprintf(verb, v), secretTok)
			}
			var buf bytes.Buffer
			slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "v", v)
			slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "v", v)
			noLeak(t, buf.String(), secretTok)
		})
	}
	t.Run("a Secret marshals to JSON redacted", func(t *testing.T) {
		b, err := json.Marshal(struct{ K Secret }{Secret(secretTok)})
		if err != nil {
			t.Fatal(err)
		}
		noLeak(t, string(b), secretTok)
	})
}

// tokenServer is a loopback OAuth token endpoint that issues at-N and
// rotates the refresh token to rt-N on each refresh.
type tokenServer struct {
	*httptest.Server
	expiresIn int // seconds; 0 sends none

	mu    sync.Mutex
	n     int
	forms []map[string]string
	fail  func(w http.ResponseWriter) bool // if set and returns true, the request was answered
}

func newTokenServer(t *testing.T, expiresIn int) *tokenServer {
	ts := &tokenServer{expiresIn: expiresIn}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		ts.mu.Lock()
		defer ts.mu.Unlock()
		form := map[string]string{}
		for k := range r.PostForm {
			form[k] = r.PostForm.Get(k)
		}
		ts.forms = append(ts.forms, form)
		if ts.fail != nil && ts.fail(w) {
			return
		}
		ts.n++
		body := map[string]any{"access_token": fmt.Sprintf("at-%d", ts.n), "refresh_token": fmt.Sprintf("rt-%d", ts.n), "token_type": "Bearer"}
		if ts.expiresIn > 0 {
			body["expires_in"] = ts.expiresIn
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *tokenServer) requests() []map[string]string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]map[string]string(nil), ts.forms...)
}

func mustToken(t *testing.T, src oauth2.TokenSource, want string) *oauth2.Token {
	t.Helper()
	got, err := src.Token()
	if err != nil {
		t.Fatal(err)
	}
	if got.AccessToken != want {
		t.Fatalf("got access token %q, want %q", got.AccessToken, want)
	}
	return got
}

// fuzzMarker stands for a token in fuzz inputs, where the corpus writes
// "@@", so that an error quoting any token from its input is caught.
const fuzzMarker = "Zq7xTOKENx7qZ"

func plant(b []byte) []byte { return bytes.ReplaceAll(b, []byte("@@"), []byte(fuzzMarker)) }

// FuzzParseTokenFile feeds the token-file parser: it must not panic, what
// it accepts must be a usable header value that survives a round trip, and
// its errors never quote the input.
func FuzzParseTokenFile(f *testing.F) {
	for _, s := range []string{
		"@@", "@@\n", "", " \n", "@@ @@", "@@\x00", "@@\n@@",
		`{"access_token":"@@","refresh_token":"@@","expiry":"2030-01-02T03:04:05Z"}`,
		`{"access_token":"@@","expires_at":1893456000}`, `{"access_token":"@@","expires_at":1893456000000}`,
		`{"access_token":"@@","expires_at":"2030-01-02T03:04:05.5+02:00"}`, `{"access_token":"@@","expiry":-1}`,
		`{"access_token":"@@","token_type":"Bearer @@"}`, `{"access_token":"@@`, `{}`, `[]`, `{"access_token":"@@","expiry":1e400}`,
		`{"access_token":"@@","expiry":"@@"}`, `{"access_token":["@@"]}`, `{"refresh_token":"@@ @@","access_token":"@@"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = plant(b)
		tok, err := parseTokenFile(b)
		if err != nil {
			if !errors.Is(err, ErrTokenFormat) {
				t.Fatalf("error %v is not ErrTokenFormat", err)
			}
			if strings.Contains(err.Error(), fuzzMarker) {
				t.Fatalf("error %q quotes the input", err)
			}
			return
		}
		if !headerSafe(tok.AccessToken) || !headerSafe(tok.TokenType) {
			t.Fatalf("accepted an unusable token %q / %q", tok.AccessToken, tok.TokenType)
		}
		j := tokenJSON{AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken}
		if !tok.Expiry.IsZero() {
			j.Expiry, _ = json.Marshal(tok.Expiry.Format(time.RFC3339Nano))
		}
		out, _ := json.Marshal(j)
		again, err := parseTokenFile(out)
		if err != nil || again.AccessToken != tok.AccessToken || again.RefreshToken != tok.RefreshToken ||
			again.TokenType != tok.TokenType || !again.Expiry.Equal(tok.Expiry) {
			t.Fatalf("round trip of %s gave %+v, %v; want %+v", out, again, err, tok)
		}
	})
}
