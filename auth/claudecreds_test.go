package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func claudeJSON(access, refresh string, expires time.Time) string {
	return fmt.Sprintf(`{"claudeAiOauth":{"accessToken":%q,"refreshToken":%q,"expiresAt":%d,"scopes":["user:inference","user:profile"],"subscriptionType":"max"},"other":{"kept":true}}`,
		access, refresh, expires.UnixMilli())
}

// claudeLogin writes a credentials file as Claude Code would and returns
// its path and a function that says whether it is byte-for-byte and
// mtime-for-mtime what was last written.
func claudeLogin(t *testing.T, content string) (string, func() bool) {
	t.Helper()
	path := filepath.Join(t.TempDir(), ".credentials.json")
	writeFile(t, path, content, 0o600)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	untouched := func() bool {
		b, err := os.ReadFile(path)
		now, err2 := os.Stat(path)
		return err == nil && err2 == nil && string(b) == content && now.ModTime().Equal(fi.ModTime()) && now.Mode() == fi.Mode()
	}
	return path, untouched
}

func TestClaudeCodeCredentials(t *testing.T) {
	hourAgo, inAnHour := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)

	t.Run("a fresh login is used as it is, with no refresh", func(t *testing.T) {
		ts := newTokenServer(t, 3600)
		path, untouched := claudeLogin(t, claudeJSON("cc-at", "cc-rt", inAnHour))
		src, err := ClaudeCodeCredentials(path, ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		tok := mustToken(t, src, "cc-at")
		if tok.Type() != "Bearer" || tok.Expiry.UnixMilli() != inAnHour.UnixMilli() {
			t.Fatalf("got %+v", tok)
		}
		if got := tok.Extra("subscriptionType"); got != "max" {
			t.Fatalf("subscriptionType = %v, want max", got)
		}
		if n := len(ts.requests()); n != 0 || !untouched() {
			t.Fatalf("%d token requests, file untouched %v", n, untouched())
		}
	})

	t.Run("an expired login is read again before anything is refreshed", func(t *testing.T) {
		ts := newTokenServer(t, 3600)
		path, _ := claudeLogin(t, claudeJSON("cc-at-old", "cc-rt", hourAgo))
		src, err := ClaudeCodeCredentials(path, ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		// Claude Code refreshes its own login, replacing the file.
		tmp := path + ".tmp"
		writeFile(t, tmp, claudeJSON("cc-at-new", "cc-rt-2", inAnHour), 0o600)
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		mustToken(t, src, "cc-at-new")
		if n := len(ts.requests()); n != 0 {
			t.Fatalf("%d token requests, want none: the file had a fresh token", n)
		}
	})

	t.Run("a stale login is refreshed in memory and the file is never written", func(t *testing.T) {
		ts := newTokenServer(t, 3600)
		path, untouched := claudeLogin(t, claudeJSON("cc-at-old", "cc-rt", hourAgo))
		src, err := ClaudeCodeCredentials(path, ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		mustToken(t, src, "at-1")
		mustToken(t, src, "at-1")
		reqs := ts.requests()
		if len(reqs) != 1 || reqs[0]["refresh_token"] != "cc-rt" || reqs[0]["client_id"] != ClaudeCodeClientID || reqs[0]["grant_type"] != "refresh_token" {
			t.Fatalf("token requests %v, want one refresh of cc-rt by Claude Code's client", reqs)
		}
		if !untouched() {
			t.Fatal("the credentials file was changed")
		}

		t.Run("and when that expires too, the rotated refresh token is used", func(t *testing.T) {
			cs := src.(*claudeSource)
			cs.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
			mustToken(t, src, "at-2")
			if got := ts.requests()[1]["refresh_token"]; got != "rt-1" {
				t.Fatalf("second refresh used %q, want rt-1", got)
			}
			if !untouched() {
				t.Fatal("the credentials file was changed")
			}
		})
	})

	t.Run("a refused token makes it read the file, then refresh", func(t *testing.T) {
		ts := newTokenServer(t, 3600)
		path, untouched := claudeLogin(t, claudeJSON("cc-at", "cc-rt", inAnHour))
		src, err := ClaudeCodeCredentials(path, ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		tok := mustToken(t, src, "cc-at")
		if !src.(Refreshable).Invalidate(tok) {
			t.Fatal("a Claude Code login says it cannot refresh")
		}
		mustToken(t, src, "at-1")
		if !untouched() {
			t.Fatal("the credentials file was changed")
		}
	})

	t.Run("a refused refresh says why without quoting the body", func(t *testing.T) {
		ts := newTokenServer(t, 3600)
		ts.fail = func(w http.ResponseWriter) bool {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"invalid_grant","error_description":"refresh token revoked","echo":%q}`, secretTok)
			return true
		}
		path, _ := claudeLogin(t, claudeJSON("cc-at", secretTok, hourAgo))
		src, err := ClaudeCodeCredentials(path, ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, err = src.Token()
		var re *RefreshError
		if !errors.As(err, &re) || re.Status != 400 || re.Code != "invalid_grant" {
			t.Fatalf("got %v, want a RefreshError 400 invalid_grant", err)
		}
		if !strings.Contains(err.Error(), "refresh token revoked") || !strings.Contains(err.Error(), "log in again") {
			t.Fatalf("error %q does not explain itself", err)
		}
		noLeak(t, err.Error(), secretTok)
	})

	t.Run("an unreachable token endpoint is an error naming it", func(t *testing.T) {
		ts := newTokenServer(t, 3600)
		url := ts.URL
		ts.Close()
		path, _ := claudeLogin(t, claudeJSON("cc-at", secretTok, hourAgo))
		src, err := ClaudeCodeCredentials(path, url)
		if err != nil {
			t.Fatal(err)
		}
		_, err = src.Token()
		if err == nil || !strings.Contains(err.Error(), url) {
			t.Fatalf("got %v, want an error naming %s", err, url)
		}
		noLeak(t, err.Error(), secretTok)
	})

	t.Run("a stale login without a refresh token is an error saying so", func(t *testing.T) {
		path, _ := claudeLogin(t, claudeJSON("cc-at", "", hourAgo))
		src, err := ClaudeCodeCredentials(path, "http://127.0.0.1:1/token")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := src.Token(); !errors.Is(err, ErrNoRefreshToken) || !strings.Contains(err.Error(), path) {
			t.Fatalf("got %v, want ErrNoRefreshToken naming the file", err)
		}
	})
}

func TestClaudeCodeCredentialsRefuses(t *testing.T) {
	inAnHour := time.Now().Add(time.Hour)
	tests := []struct {
		name    string
		content string
		mode    fs.FileMode
		url     string
		want    error
	}{
		{"a group-readable file", claudeJSON(secretTok, "rt", inAnHour), 0o640, "", ErrFileMode},
		{"a file that is not JSON", "{" + secretTok, 0o600, "", ErrCredentialsFormat},
		{"a file without claudeAiOauth", `{"oauthAccount":{"accessToken":"` + secretTok + `"}}`, 0o600, "", ErrCredentialsFormat},
		{"a login without an access token", `{"claudeAiOauth":{"refreshToken":"` + secretTok + `"}}`, 0o600, "", ErrCredentialsFormat},
		{"an expiry that is not a number", `{"claudeAiOauth":{"accessToken":"` + secretTok + `","expiresAt":"soon"}}`, 0o600, "", ErrCredentialsFormat},
		{"a token URL that is not http", claudeJSON(secretTok, "rt", inAnHour), 0o600, "ftp://x/token", ErrRefreshConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused at once", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".credentials.json")
			writeFile(t, path, tt.content, tt.mode)
			_, err := ClaudeCodeCredentials(path, tt.url)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			noLeak(t, err.Error(), secretTok)
		})
	}
	t.Run("a missing login is refused naming the file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nope.json")
		if _, err := ClaudeCodeCredentials(path, ""); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestDefaultClaudeCodeCredentialsPath(t *testing.T) {
	t.Run("CLAUDE_CONFIG_DIR wins", func(t *testing.T) {
		t.Setenv("CLAUDE_CONFIG_DIR", "/cfg")
		if got, _ := DefaultClaudeCodeCredentialsPath(); got != "/cfg/.credentials.json" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("else it is under ~/.claude", func(t *testing.T) {
		t.Setenv("CLAUDE_CONFIG_DIR", "")
		t.Setenv("HOME", "/home/u")
		if got, _ := DefaultClaudeCodeCredentialsPath(); got != "/home/u/.claude/.credentials.json" {
			t.Fatalf("got %q", got)
		}
	})
}

// FuzzParseClaudeCredentials feeds the parser of Claude Code's file: no
// panic, accepted tokens are usable header values that survive a round
// trip, and errors never quote the input.
func FuzzParseClaudeCredentials(f *testing.F) {
	for _, s := range []string{
		claudeJSON("@@", "@@", time.UnixMilli(1893456000000)), `{"claudeAiOauth":{"accessToken":"@@"}}`,
		`{"claudeAiOauth":null}`, `{"claudeAiOauth":{"accessToken":"@@ @@"}}`, `{"claudeAiOauth":{"accessToken":"@@","expiresAt":1e30}}`,
		`{"claudeAiOauth":{"accessToken":"@@","expiresAt":-5}}`, `[]`, ``, `{"claudeAiOauth":{"accessToken":"@@","scopes":"@@"}}`,
		`{"claudeAiOauth":{"accessToken":"@@","expiresAt":"@@"}}`, `{"claudeAiOauth":{"accessToken":"@@`, `{"claudeAiOauth":"@@"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = plant(b)
		tok, err := parseClaudeCredentials(b)
		if err != nil {
			if !errors.Is(err, ErrCredentialsFormat) {
				t.Fatalf("error %v is not ErrCredentialsFormat", err)
			}
			if strings.Contains(err.Error(), fuzzMarker) {
				t.Fatalf("error %q quotes the input", err)
			}
			return
		}
		if !headerSafe(tok.AccessToken) {
			t.Fatalf("accepted an unusable token %q", tok.AccessToken)
		}
		var exp int64
		if !tok.Expiry.IsZero() {
			exp = tok.Expiry.UnixMilli()
		}
		out, _ := json.Marshal(map[string]any{"claudeAiOauth": map[string]any{"accessToken": tok.AccessToken, "refreshToken": tok.RefreshToken, "expiresAt": exp}})
		again, err := parseClaudeCredentials(out)
		if err != nil || again.AccessToken != tok.AccessToken || again.RefreshToken != tok.RefreshToken || !again.Expiry.Equal(tok.Expiry) {
			t.Fatalf("round trip of %s gave %+v, %v", out, again, err)
		}
	})
}
