package mcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sessiongateway/gateway/addressing"
	mcpleg "github.com/sessiongateway/gateway/leg/mcp"
)

// FuzzCleanName: whatever a client calls itself, its session name parses
// as a name (so it can be addressed), and so does its address.
func FuzzCleanName(f *testing.F) {
	for _, s := range []string{"", "claude-code", "Cursor Agent", "uds:/tmp/x.sock", "mcp:mcp:x", "did:web:x", " [evil] ", "a\x00b", "\xff\xfe", "/abs/path", "name:bridge:x", "- -"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		name := cleanName(in)
		if n := utf8.RuneCountInString(name); n == 0 || n > MaxNameLen {
			t.Fatalf("cleanName(%q) = %q: %d characters", in, name, n)
		}
		for _, s := range []string{name, mcpleg.AddressPrefix + name} {
			a, err := addressing.Parse(s)
			if err != nil || a.Kind != addressing.KindName {
				t.Fatalf("cleanName(%q) = %q: %q does not parse as a name: %v", in, name, s, err)
			}
		}
	})
}

// FuzzTranscriptSession never panics and gives back a non-empty session.
func FuzzTranscriptSession(f *testing.F) {
	for _, s := range []string{"gateway://remote/build-bot/transcript", "gateway://remote//transcript", "gateway://remote/%zz/transcript", "gateway://sessions"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		if s, ok := transcriptSession(uri); ok && s == "" {
			t.Fatalf("%q gave an empty session", uri)
		}
	})
}

// FuzzSessionRequest posts whatever a client might into an open session
// over HTTP (the SDK's framing, then the tools' argument decoding): never
// a 5xx, a panic or a hang past the request's deadline (but for a wait
// the client asked for).
func FuzzSessionRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_sessions","arguments":{"protocol":"mcp","name":"x"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"fuzz","text":"hi","wait":true,"timeout_seconds":0.01}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"wait_for_messages","arguments":{"timeout_seconds":0.01,"cursor":18446744073709551615,"max":-1}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"answer_permission_request","arguments":{"id":"p","behavior":"answer","answers":["a=b"],"suggestions":[-1]}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"remote_session_output","arguments":{"session":"x","cursor":-9}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"gateway://remote/%zz/transcript"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"resources/subscribe","params":{"uri":"gateway://inbox"}}`,
		`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`, `{"id":1e999}`, "\x00", `[[[[[[[[`,
	} {
		f.Add([]byte(s))
	}
	w := newWorld(f)
	url := httpWorld(f, w)
	sid := open(f, url, true).session
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(sessionHeader, sid)
		resp, err := http.DefaultClient.Do(req)
		if errors.Is(err, context.DeadlineExceeded) && bytes.Contains(body, []byte("wait")) {
			return // a wait (default 30 s) outlasting this request's deadline
		}
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Fatalf("%q: %s", body, resp.Status)
		}
	})
}
