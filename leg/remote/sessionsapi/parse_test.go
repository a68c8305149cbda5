package sessionsapi

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sessiongateway/gateway/auth"
)

var now = time.Date(2026, 3, 11, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{"seconds are read as seconds", "7", 7 * time.Second, true},
		{"zero means at once", "0", 0, true},
		{"spaces around are ignored", " 3 ", 3 * time.Second, true},
		{"an HTTP date in the future is the time until it", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"an HTTP date in the past means now", now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"an obsolete RFC 850 date is read too", now.Add(time.Minute).Format("Monday, 02-Jan-06 15:04:05 GMT"), time.Minute, true},
		{"a huge number is clamped to a day", "99999999999999999999999", maxRetryAfter, true},
		{"a far date is clamped to a day", now.AddDate(1, 0, 0).Format(http.TimeFormat), maxRetryAfter, true},
		{"a negative number is ignored", "-5", 0, false},
		{"a fraction is ignored", "1.5", 0, false},
		{"garbage is ignored", "soon", 0, false},
		{"empty is absent", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseRetryAfter(tt.in, now)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseAPIError(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     http.Header
		body       string
		want       error
		typ, msg   string
		retryAfter time.Duration
	}{
		{"the error envelope is read", 404, nil, `{"type":"error","error":{"type":"not_found_error","message":"session not found"}}`,
			ErrNotFound, "not_found_error", "session not found", 0},
		{"a 429 carries its Retry-After", 429, http.Header{"Retry-After": {"12"}}, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			ErrRateLimited, "rate_limit_error", "slow down", 12 * time.Second},
		{"a 529 is a server error", 529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"overloaded"}}`,
			ErrServer, "overloaded_error", "overloaded", 0},
		{"a 422 is a bad request", 422, nil, `{}`, ErrBadRequest, "", "", 0},
		{"an HTML error page leaves type and message empty", 502, nil, `<html>bad gateway</html>`, ErrServer, "", "", 0},
		{"a message with control characters is flattened", 400, nil, `{"error":{"type":"x","message":"a\u0000b\nc\u001b[31m"}}`,
			ErrBadRequest, "x", "a b c [31m", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := parseAPIError("Op", tt.status, tt.header, []byte(tt.body), now)
			if !errors.Is(e, tt.want) || e.Type != tt.typ || e.Message != tt.msg || e.RetryAfter != tt.retryAfter || e.Status != tt.status {
				t.Fatalf("got %+v", e)
			}
			for _, other := range []error{ErrBadRequest, ErrUnauthorized, ErrForbidden, ErrNotFound, ErrRateLimited, ErrServer} {
				if other != tt.want && errors.Is(e, other) {
					t.Fatalf("%v also matches %v", e, other)
				}
			}
		})
	}
}

// FuzzParseRetryAfter: any header value gives a delay between 0 and a day,
// and a plain number of seconds is read exactly.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "-1", "1e3", "Wed, 21 Oct 2026 07:28:00 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "18446744073709551616", " 5", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseRetryAfter(s, now)
		if d < 0 || d > maxRetryAfter || (!ok && d != 0) {
			t.Fatalf("parseRetryAfter(%q) = %v, %v", s, d, ok)
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32); err == nil && n < 86400 && (!ok || d != time.Duration(n)*time.Second) {
			t.Fatalf("parseRetryAfter(%q) = %v, %v; want %ds", s, d, ok, n)
		}
	})
}

// FuzzParseAPIError: any error answer gives an error that matches its
// status class and prints one bounded, valid line.
func FuzzParseAPIError(f *testing.F) {
	f.Add(404, "", []byte(`{"type":"error","error":{"type":"not_found_error","message":"session not found"}}`))
	f.Add(429, "3", []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"x"}}`))
	f.Add(503, "Wed, 21 Oct 2026 07:28:00 GMT", []byte(`not json`))
	f.Add(400, "", []byte(`{"error":{"message":"\ud800 \u0000"}}`))
	f.Add(500, "", []byte("{\"error\":{\"message\":\"\xff\xfe\"}}"))
	f.Fuzz(func(t *testing.T, status int, retryAfter string, body []byte) {
		if status < 400 || status > 599 {
			return
		}
		e := parseAPIError("Fuzz", status, http.Header{"Retry-After": {retryAfter}}, body, now)
		if !errors.Is(e, statusClass(status)) {
			t.Fatalf("%d does not match its class", status)
		}
		msg := e.Error()
		if !utf8.ValidString(msg) || strings.ContainsAny(msg, "\n\r\x00") || len(msg) > 2*maxMessage+400 {
			t.Fatalf("error text %q", msg)
		}
	})
}

// FuzzSessionJSON: a session object from the server never panics the
// decoder, and what decodes survives a round trip through its own JSON.
func FuzzSessionJSON(f *testing.F) {
	for _, s := range []string{
		`{"id":"session_01","title":"t","session_status":"active","created_at":"2026-03-11T14:42:56.620319Z","session_context":{"model":"m"}}`,
		`{"id":"s","status":"idle","created_at":"yesterday"}`, `{"id":1}`, `null`, `{"session_context":null}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Session
		if err := json.Unmarshal(b, &s); err != nil {
			return
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal %+v: %v", s, err)
		}
		var again Session
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("%s does not decode: %v", out, err)
		}
		if again.ID != s.ID || again.Title != s.Title || again.Status != s.Status || !again.CreatedAt.Equal(s.CreatedAt) {
			t.Fatalf("round trip of %s changed %+v into %+v", b, s, again)
		}
	})
}

// FuzzSignedEventVerifies: whatever event the client accepts to post, a
// verifier that strips the attestation and canonicalises verifies it; what
// it refuses is an EventError-worthy ErrInvalidEvent.
func FuzzSignedEventVerifies(f *testing.F) {
	seed := bytes.Repeat([]byte{9}, ed25519.SeedSize)
	path := filepath.Join(f.TempDir(), "key")
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		f.Fatal(err)
	}
	signer, err := auth.NewEd25519FileSigner(path)
	if err != nil {
		f.Fatal(err)
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	c := &Client{signer: signer}
	for _, s := range []string{
		`{"type":"user","message":{"role":"user","content":"hi"}}`, `{"uuid":"u","n":1e2,"s":"\u00e9<>&"}`,
		`{"a":{"b":[1,2,{"c":null}]},"uuid":null}`, `{"a":"\ud83d\ude00"}`, `{}`, `{"uuid":""}`, `[]`, `{"x":1,"x":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := c.prepareOne(context.Background(), b)
		if err != nil {
			if !errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("refused %q with %v, not ErrInvalidEvent", b, err)
			}
			return
		}
		if err := VerifyEvent(out, pub); err != nil {
			t.Fatalf("prepared %s from %q does not verify: %v", out, b, err)
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(out, &obj) != nil || len(obj[UUIDField]) < 3 {
			t.Fatalf("prepared %s has no uuid", out)
		}
	})
}
