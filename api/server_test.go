package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// claudeStub is a Claude leg with two sessions named work and one review,
// recording what it is sent.
func claudeStub() *legtest.Fake {
	return legtest.New(message.ProtocolClaude,
		message.Session{Address: "uds:/tmp/cc-socks/10.sock", Protocol: message.ProtocolClaude, Name: "work", SessionID: "a"},
		message.Session{Address: "uds:/tmp/cc-socks/11.sock", Protocol: message.ProtocolClaude, Name: "work", SessionID: "b"},
		message.Session{Address: "uds:/tmp/cc-socks/12.sock", Protocol: message.ProtocolClaude, Name: "review", SessionID: "c"},
	)
}

func newTestServer() *Server {
	return NewServer(Config{Router: router.New(router.Config{}, claudeStub()), Token: "tok"})
}

func TestBadInputGetsA4xxWithAJSONError(t *testing.T) {
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		status int
		code   string
	}{
		{"bad JSON is 400", "POST", "/v1/messages", `{"to":`, 400, CodeBadRequest},
		{"an unknown field is 400", "POST", "/v1/messages", `{"to":"review","text":"x","bogus":1}`, 400, CodeBadRequest},
		{"an empty body is 400", "POST", "/v1/messages", ``, 400, CodeBadRequest},
		{"a missing text is 400", "POST", "/v1/messages", `{"to":"review"}`, 400, CodeBadRequest},
		{"a bad mode is 400", "POST", "/v1/messages", `{"to":"review","text":"x","mode":"yolo"}`, 400, CodeBadRequest},
		{"an unparsable address is 400", "POST", "/v1/messages", `{"to":"uds:relative","text":"x"}`, 400, CodeBadAddress},
		{"a windows pipe is 400 unsupported here", "POST", "/v1/messages", `{"to":"\\\\.\\pipe\\work","text":"x"}`, 400, CodeBadAddress},
		{"an unknown name is 404 with suggestions", "POST", "/v1/messages", `{"to":"reviw","text":"x"}`, 404, CodeNotFound},
		{"an ambiguous name is 409 with candidates", "POST", "/v1/messages", `{"to":"work","text":"x"}`, 409, CodeAmbiguous},
		{"an oversized body is 413", "POST", "/v1/messages", `{"to":"review","text":"` + strings.Repeat("a", MaxBody) + `"}`, 413, CodeTooLarge},
		{"an unknown message id is 404", "GET", "/v1/messages/nope", ``, 404, CodeNotFound},
		{"a bad timeout is 400", "GET", "/v1/messages/x?wait=1&timeout=forever", ``, 400, CodeBadRequest},
		{"a bad Last-Event-ID is 400", "GET", "/v1/events?last_event_id=-4", ``, 400, CodeBadRequest},
		{"a held decision without an action is 400", "POST", "/v1/held/x", `{}`, 400, CodeBadRequest},
		{"an unknown endpoint is 404", "GET", "/v2/nothing", ``, 404, CodeNotFound},
		{"a known path with the wrong method is 405", "DELETE", "/v1/sessions", ``, 405, CodeMethodNotAllowed},
		{"a known pattern with the wrong method is 405", "PUT", "/v1/messages/abc", ``, 405, CodeMethodNotAllowed},
	}
	h := newTestServer().Handler()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body)))
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d: %s", rec.Code, tt.status, rec.Body.String())
			}
			var e Error
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code != tt.code || e.Error == "" {
				t.Fatalf("body = %s, want code %s", rec.Body.String(), tt.code)
			}
			switch tt.code {
			case CodeAmbiguous:
				if len(e.Candidates) != 2 {
					t.Errorf("candidates = %v", e.Candidates)
				}
			case CodeNotFound:
				if strings.Contains(tt.name, "suggestions") && len(e.Suggestions) == 0 {
					t.Errorf("no suggestions")
				}
			case CodeMethodNotAllowed:
				if rec.Header().Get("Allow") == "" || !strings.Contains(e.Error, rec.Header().Get("Allow")) {
					t.Errorf("Allow = %q, error %q: want the allowed methods in both", rec.Header().Get("Allow"), e.Error)
				}
			}
		})
	}
}

func TestSendReturnsTheMessageAndItCanBeRead(t *testing.T) {
	h := newTestServer().Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/messages", strings.NewReader(`{"to":"review","text":"hello","mode":"bypass"}`)))
	if rec.Code != http.StatusCreated {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	var out router.Outbound
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Status != message.StatusSent || out.Message.Mode != message.ModeBypass || out.Message.ToName != "review" {
		t.Fatalf("got %+v", out)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/messages/"+out.Message.ID, nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), out.Message.ID) {
		t.Fatalf("read back: %d %s", rec.Code, rec.Body.String())
	}
}

func TestTCPNeedsTokenAndAllowedHost(t *testing.T) {
	h := newTestServer().TCPHandler("127.0.0.1:7777")
	tests := []struct {
		name   string
		path   string
		host   string
		auth   string
		status int
	}{
		{"a request with the token and a loopback host passes", "/v1/sessions", "127.0.0.1:7777", "Bearer tok", 200},
		{"localhost spelling of the same port passes", "/v1/sessions", "localhost:7777", "Bearer tok", 200},
		{"no token is 401", "/v1/sessions", "127.0.0.1:7777", "", 401},
		{"a wrong token is 401", "/v1/sessions", "127.0.0.1:7777", "Bearer nope", 401},
		{"a foreign Host is refused", "/v1/sessions", "evil.example:7777", "Bearer tok", 421},
		{"healthz needs no token", "/healthz", "127.0.0.1:7777", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tt.path, nil)
			req.Host = tt.host
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d: %s", rec.Code, tt.status, rec.Body.String())
			}
		})
	}
}
