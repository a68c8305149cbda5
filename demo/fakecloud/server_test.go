package fakecloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sessiongateway/gateway/leg/remote/wire"
)

const (
	token = "tok-123"
	org   = "org-uuid-1"
)

func start(t *testing.T) *Server {
	return Start(t, Options{Token: token, SessionKey: "sk-abc", OrgUUID: org})
}

// headers are what every request carries
// (docs/protocols/claude-ai-remote.md#request-headers).
func headers() http.Header {
	return http.Header{
		"Authorization":       {"Bearer " + token},
		"Anthropic-Version":   {"2023-06-01"},
		"Anthropic-Beta":      {"ccr-byoc-2025-07-29"},
		"X-Organization-Uuid": {org},
		"Content-Type":        {"application/json"},
	}
}

// do sends a request and decodes a JSON answer into out (if not nil).
func do(t *testing.T, h http.Header, method, url, body string, out any) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, b)
		}
	}
	if resp.StatusCode != http.StatusOK {
		resp.Header.Set("X-Test-Body", string(b))
	}
	return resp
}

func TestRequestsAreCheckedForCredentialsHeadersAndOrganisation(t *testing.T) {
	s := start(t)
	envs := s.URL() + "/v1/environment_providers/private/organizations/%s/environments"
	tests := []struct {
		name   string
		edit   func(h http.Header)
		url    string
		status int
		body   string
	}{
		{"a request with the bearer token and every header is served", func(http.Header) {}, "", 200, ""},
		{"a request without credentials is refused with 401", func(h http.Header) { h.Del("Authorization") }, "", 401, "authentication_error"},
		{"a request with a wrong token is refused with 401", func(h http.Header) { h.Set("Authorization", "Bearer nope") }, "", 401, "credentials"},
		{"a request with the sessionKey cookie instead of a token is served", func(h http.Header) {
			h.Del("Authorization")
			h.Set("Cookie", "sessionKey=sk-abc")
		}, "", 200, ""},
		{"a request with a wrong cookie is refused with 401", func(h http.Header) {
			h.Del("Authorization")
			h.Set("Cookie", "sessionKey=other")
		}, "", 401, ""},
		{"a request without anthropic-version gets a 400 naming it", func(h http.Header) { h.Del("Anthropic-Version") }, "", 400, "anthropic-version"},
		{"a request without anthropic-beta gets a 400 naming it", func(h http.Header) { h.Del("Anthropic-Beta") }, "", 400, "anthropic-beta"},
		{"a request without the organisation header gets a 400 naming it", func(h http.Header) { h.Del("X-Organization-Uuid") }, "", 400, "x-organization-uuid"},
		{"a request for another organisation is refused with 403", func(h http.Header) { h.Set("X-Organization-Uuid", "org-other") }, "", 403, "permission_error"},
		{"an environments path naming another organisation is refused with 403", func(http.Header) {}, fmt.Sprintf(envs, "org-other"), 403, ""},
		{"an environments path naming our organisation is served", func(http.Header) {}, fmt.Sprintf(envs, org), 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := headers()
			tc.edit(h)
			url := tc.url
			if url == "" {
				url = s.URL() + "/v1/sessions"
			}
			resp := do(t, h, "GET", url, "", nil)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, tc.status, resp.Header.Get("X-Test-Body"))
			}
			if !strings.Contains(resp.Header.Get("X-Test-Body"), tc.body) {
				t.Errorf("body %q lacks %q", resp.Header.Get("X-Test-Body"), tc.body)
			}
		})
	}
}

func TestTheSubscribeSocketIsCheckedForCredentialsAndOrganisation(t *testing.T) {
	s := start(t)
	id := s.CreateSession("x")
	base := "ws://" + strings.TrimPrefix(s.URL(), "http://") + "/v1/sessions/ws/" + id + "/subscribe"
	tests := []struct {
		name   string
		url    string
		h      http.Header
		status int
	}{
		{"a socket with the cookie and organisation opens", base + "?organization_uuid=" + org, http.Header{"Cookie": {"sessionKey=sk-abc"}}, 101},
		{"a socket without credentials is refused with 401", base + "?organization_uuid=" + org, nil, 401},
		{"a socket without organization_uuid is refused with 400", base, http.Header{"Cookie": {"sessionKey=sk-abc"}}, 400},
		{"a socket for another organisation is refused with 403", base + "?organization_uuid=nope", http.Header{"Cookie": {"sessionKey=sk-abc"}}, 403},
		{"a socket for an unknown session is refused with 404", strings.Replace(base, id, "session_missing", 1) + "?organization_uuid=" + org, http.Header{"Cookie": {"sessionKey=sk-abc"}}, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, resp, err := websocket.Dial(context.Background(), tc.url, &websocket.DialOptions{HTTPHeader: tc.h})
			if c != nil {
				defer c.CloseNow()
			}
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tc.status, err)
			}
		})
	}
}

func TestSessionEndpoints(t *testing.T) {
	s := start(t)
	u := s.URL() + "/v1/sessions"
	var created Session
	resp := do(t, headers(), "POST", u, `{"title":"first","environment_id":"env_fake_bridge",
		"events":[{"type":"event","data":{"type":"user","message":{"role":"user","content":"hi"}}}],
		"session_context":{"model":"claude-sonnet-4-6"}}`, &created)
	if resp.StatusCode != 200 || created.ID == "" || created.Title != "first" || created.Status != "active" {
		t.Fatalf("create: %d %+v", resp.StatusCode, created)
	}
	other := s.CreateSession("second")

	t.Run("listing returns the sessions in creation order", func(t *testing.T) {
		var p struct {
			Data            []Session
			FirstID, LastID string `json:"-"`
		}
		do(t, headers(), "GET", u, "", &p)
		if len(p.Data) != 2 || p.Data[0].ID != created.ID || p.Data[1].ID != other {
			t.Fatalf("list: %+v", p.Data)
		}
	})
	t.Run("getting a session returns its context", func(t *testing.T) {
		var got Session
		do(t, headers(), "GET", u+"/"+created.ID, "", &got)
		if got.EnvironmentID != "env_fake_bridge" || !strings.Contains(string(got.SessionContext), "claude-sonnet-4-6") {
			t.Fatalf("get: %+v", got)
		}
	})
	t.Run("the initial events of a create are stored", func(t *testing.T) {
		var p struct{ Data []json.RawMessage }
		do(t, headers(), "GET", u+"/"+created.ID+"/events", "", &p)
		if len(p.Data) != 1 || !strings.Contains(string(p.Data[0]), `"hi"`) {
			t.Fatalf("events: %s", p.Data)
		}
	})
	patches := []struct {
		name, body  string
		status      int
		title, stat string
	}{
		{"patching the title changes only the title", `{"title":"renamed"}`, 200, "renamed", "active"},
		{"patching the status to archived archives it", `{"status":"archived"}`, 200, "renamed", "archived"},
		{"patching to an unknown status is a 400", `{"status":"sleeping"}`, 400, "renamed", "archived"},
		{"a body that is not JSON is a 400", `{`, 400, "renamed", "archived"},
	}
	for _, tc := range patches {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, headers(), "PATCH", u+"/"+created.ID, tc.body, nil)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			var got Session
			do(t, headers(), "GET", u+"/"+created.ID, "", &got)
			if got.Title != tc.title || got.Status != tc.stat {
				t.Fatalf("after patch: %+v", got)
			}
		})
	}
	missing := []struct{ name, method, path string }{
		{"getting an unknown session is a 404", "GET", "/session_nope"},
		{"patching an unknown session is a 404", "PATCH", "/session_nope"},
		{"listing events of an unknown session is a 404", "GET", "/session_nope/events"},
		{"share-status of an unknown session is a 404", "GET", "/session_nope/share-status"},
	}
	for _, tc := range missing {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			if tc.method == "PATCH" {
				body = `{"title":"x"}`
			}
			if resp := do(t, headers(), tc.method, u+tc.path, body, nil); resp.StatusCode != 404 {
				t.Fatalf("status %d", resp.StatusCode)
			}
		})
	}
	t.Run("share-status answers for a known session", func(t *testing.T) {
		var got map[string]any
		if resp := do(t, headers(), "GET", u+"/"+created.ID+"/share-status", "", &got); resp.StatusCode != 200 || got["shared"] != false {
			t.Fatalf("share-status: %d %v", resp.StatusCode, got)
		}
	})
}

func TestEnvironmentEndpoints(t *testing.T) {
	s := start(t)
	base := s.URL() + "/v1/environment_providers/private/organizations/" + org + "/environments"
	t.Run("the list carries the default bridge environment in claude.ai's shape", func(t *testing.T) {
		var got struct {
			Environments []Environment `json:"environments"`
			HasMore      bool          `json:"has_more"`
			FirstID      string        `json:"first_id"`
		}
		do(t, headers(), "GET", base, "", &got)
		if len(got.Environments) != 1 || got.FirstID != "env_fake_bridge" || got.Environments[0].BridgeInfo == nil || !got.Environments[0].BridgeInfo.Online {
			t.Fatalf("environments: %+v", got)
		}
	})
	t.Run("one environment is found by id", func(t *testing.T) {
		var got Environment
		if resp := do(t, headers(), "GET", base+"/env_fake_bridge", "", &got); resp.StatusCode != 200 || got.Kind != "bridge" {
			t.Fatalf("%d %+v", resp.StatusCode, got)
		}
	})
	t.Run("an unknown environment is a 404", func(t *testing.T) {
		if resp := do(t, headers(), "GET", base+"/env_nope", "", nil); resp.StatusCode != 404 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

func TestEventsArePagedWithAfterID(t *testing.T) {
	s := start(t)
	id := s.CreateSession("paging")
	u := s.URL() + "/v1/sessions/" + id + "/events"
	for i := range 5 {
		if err := s.Emit(id, fmt.Sprintf(`{"type":"assistant","uuid":"e%d","message":{"id":"m%d","content":[]}}`, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	type pg struct {
		Data    []struct{ UUID string }
		HasMore bool   `json:"has_more"`
		LastID  string `json:"last_id"`
	}
	tests := []struct {
		name    string
		query   string
		want    []string
		hasMore bool
		status  int
	}{
		{"the first page holds limit events and says there are more", "?limit=2", []string{"e0", "e1"}, true, 200},
		{"after_id starts right after the named event", "?limit=2&after_id=e1", []string{"e2", "e3"}, true, 200},
		{"the last page says there are no more", "?limit=2&after_id=e3", []string{"e4"}, false, 200},
		{"after the last event the page is empty", "?after_id=e4", nil, false, 200},
		{"without a limit every event comes back", "", []string{"e0", "e1", "e2", "e3", "e4"}, false, 200},
		{"an after_id the session never had is a 400", "?after_id=nope", nil, false, 400},
		{"a limit that is not a positive number is a 400", "?limit=0", nil, false, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p pg
			resp := do(t, headers(), "GET", u+tc.query, "", &p)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			var got []string
			for _, e := range p.Data {
				got = append(got, e.UUID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || p.HasMore != tc.hasMore {
				t.Fatalf("got %v more=%v, want %v more=%v", got, p.HasMore, tc.want, tc.hasMore)
			}
		})
	}
}

// dial opens the subscribe socket with the cookie, as the web client does.
func dial(t *testing.T, s *Server, id string, replay bool) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, s.WebSocketURL(id, replay), &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {"sessionKey=sk-abc"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func next(t *testing.T, c *websocket.Conn) wire.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if typ != websocket.MessageText || !strings.HasSuffix(string(b), "\n") {
		t.Fatalf("frame %v %q is not one NDJSON text line", typ, b)
	}
	m, err := wire.Decode(b)
	if err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return m
}

func send(t *testing.T, c *websocket.Conn, line string) {
	t.Helper()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(line+"\n")); err != nil {
		t.Fatal(err)
	}
}

func TestTheSubscribeSocket(t *testing.T) {
	s := start(t)
	const canUse = `{"type":"control_request","request_id":"req-1","request":{"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"toolu_1","input":{"command":"ls"}}}`

	t.Run("a keep_alive from the client is answered with a keep_alive", func(t *testing.T) {
		c := dial(t, s, s.CreateSession("ka"), false)
		send(t, c, `{"type":"keep_alive"}`)
		if m := next(t, c); m.Kind != wire.KindKeepAlive {
			t.Fatalf("got %s", m.Type)
		}
	})
	t.Run("an emitted keep_alive reaches the client and is not stored", func(t *testing.T) {
		id := s.CreateSession("ka2")
		c := dial(t, s, id, false)
		if err := s.Emit(id, `{"type":"keep_alive"}`); err != nil {
			t.Fatal(err)
		}
		if m := next(t, c); m.Kind != wire.KindKeepAlive {
			t.Fatalf("got %s", m.Type)
		}
		var p struct{ Data []json.RawMessage }
		do(t, headers(), "GET", s.URL()+"/v1/sessions/"+id+"/events", "", &p)
		if len(p.Data) != 0 {
			t.Fatalf("stored %s", p.Data)
		}
	})
	t.Run("emitted messages reach the client in order with a uuid and session id", func(t *testing.T) {
		id := s.CreateSession("emit")
		c := dial(t, s, id, false)
		lines := []string{
			`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"thinking","thinking":"","signature":"x"}],"stop_reason":null}}`,
			`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn"}}`,
			`{"type":"result","subtype":"success","result":"","is_error":false}`,
		}
		for _, l := range lines {
			if err := s.Emit(id, l); err != nil {
				t.Fatal(err)
			}
		}
		want := []wire.Kind{wire.KindAssistant, wire.KindAssistant, wire.KindResult}
		for i, k := range want {
			m := next(t, c)
			if m.Kind != k || m.UUID == "" || m.SessionID != id {
				t.Fatalf("message %d: %s uuid=%q session=%q", i, m.Type, m.UUID, m.SessionID)
			}
		}
	})
	t.Run("replay=true sends the stored events before live ones", func(t *testing.T) {
		id := s.CreateSession("replay")
		for i := range 3 {
			s.Emit(id, fmt.Sprintf(`{"type":"result","uuid":"r%d","subtype":"success"}`, i))
		}
		c := dial(t, s, id, true)
		s.Emit(id, `{"type":"result","uuid":"live","subtype":"success"}`)
		for _, want := range []string{"r0", "r1", "r2", "live"} {
			if m := next(t, c); m.UUID != want {
				t.Fatalf("got %q, want %q", m.UUID, want)
			}
		}
	})
	t.Run("without replay stored events are not resent", func(t *testing.T) {
		id := s.CreateSession("noreplay")
		s.Emit(id, `{"type":"result","uuid":"old","subtype":"success"}`)
		c := dial(t, s, id, false)
		s.Emit(id, `{"type":"result","uuid":"new","subtype":"success"}`)
		if m := next(t, c); m.UUID != "new" {
			t.Fatalf("got %q", m.UUID)
		}
	})
	t.Run("initialize is answered with the pending permission requests", func(t *testing.T) {
		id := s.CreateSession("init")
		if err := s.Emit(id, canUse); err != nil {
			t.Fatal(err)
		}
		c := dial(t, s, id, false)
		send(t, c, `{"request_id":"ocg3n6ewj7k","type":"control_request","request":{"subtype":"initialize"}}`)
		m := next(t, c)
		r := m.ControlResponse
		if r == nil || r.Subtype != "success" || r.RequestID != "ocg3n6ewj7k" || r.Initialize == nil {
			t.Fatalf("answer: %s", m.Raw)
		}
		if len(r.Pending) != 1 || r.Pending[0].RequestID != "req-1" || r.Pending[0].ToolName != "Bash" {
			t.Fatalf("pending: %+v", r.Pending)
		}
		if got := s.Controls(id); len(got) != 1 || got[0].Subtype != "initialize" {
			t.Fatalf("controls: %+v", got)
		}
	})
	t.Run("a cancel request withdraws a pending prompt", func(t *testing.T) {
		id := s.CreateSession("cancel")
		s.Emit(id, canUse)
		if len(s.Permissions(id)) != 1 {
			t.Fatal("prompt not pending")
		}
		if err := s.Emit(id, `{"type":"control_cancel_request","request_id":"req-1"}`); err != nil {
			t.Fatal(err)
		}
		if p := s.Permissions(id); len(p) != 0 {
			t.Fatalf("still pending: %+v", p)
		}
	})
	t.Run("a permission answer over the socket is ignored", func(t *testing.T) {
		id := s.CreateSession("wsanswer")
		s.Emit(id, canUse)
		c := dial(t, s, id, false)
		send(t, c, `{"type":"control_response","response":{"subtype":"success","request_id":"req-1","response":{"behavior":"allow"}}}`)
		send(t, c, `{"type":"keep_alive"}`) // its echo proves the answer was read first
		next(t, c)
		if len(s.Permissions(id)) != 1 || len(s.Answers(id)) != 0 {
			t.Fatalf("answer over the socket was taken: %+v", s.Answers(id))
		}
	})
	t.Run("a permission answer posted over HTTP resolves the prompt and is streamed", func(t *testing.T) {
		id := s.CreateSession("answer")
		s.Emit(id, canUse)
		c := dial(t, s, id, false)
		body := `{"events":[{"type":"control_response","response":{"subtype":"success","request_id":"req-1",
			"response":{"toolUseID":"toolu_1","behavior":"allow","updatedInput":{"command":"ls -la"},
			"updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls"}],"behavior":"allow","destination":"localSettings"}]}}}]}`
		if resp := do(t, headers(), "POST", s.URL()+"/v1/sessions/"+id+"/events", body, nil); resp.StatusCode != 200 {
			t.Fatalf("post: %d %s", resp.StatusCode, resp.Header.Get("X-Test-Body"))
		}
		a := s.Answers(id)
		if len(a) != 1 || !a[0].Matched || a[0].Decision == nil || a[0].Decision.Behavior != "allow" ||
			len(a[0].Decision.UpdatedPermissions) != 1 || string(a[0].Decision.UpdatedInput) != `{"command":"ls -la"}` {
			t.Fatalf("answers: %+v", a)
		}
		if len(s.Permissions(id)) != 0 {
			t.Fatal("prompt still pending")
		}
		if m := next(t, c); m.Kind != wire.KindControlResponse {
			t.Fatalf("streamed %s", m.Type)
		}
	})
	t.Run("a posted answer for no pending prompt is recorded as unmatched", func(t *testing.T) {
		id := s.CreateSession("stray")
		body := `{"events":[{"type":"control_response","response":{"subtype":"success","request_id":"nope","response":{"behavior":"deny","message":"no"}}}]}`
		do(t, headers(), "POST", s.URL()+"/v1/sessions/"+id+"/events", body, nil)
		if a := s.Answers(id); len(a) != 1 || a[0].Matched || a[0].Decision.Message != "no" {
			t.Fatalf("answers: %+v", a)
		}
	})
	t.Run("a posted user message is stored and streamed", func(t *testing.T) {
		id := s.CreateSession("user")
		c := dial(t, s, id, false)
		body := `{"events":[{"type":"user","uuid":"u-1","session_id":"` + id + `","parent_tool_use_id":null,"message":{"role":"user","content":"Hello"}}]}`
		do(t, headers(), "POST", s.URL()+"/v1/sessions/"+id+"/events", body, nil)
		if m := next(t, c); m.UUID != "u-1" || m.User == nil || m.User.Content.Text() != "Hello" {
			t.Fatalf("streamed %s", m.Raw)
		}
		if p := s.Posted(id); len(p) != 1 || p[0].Type != "user" {
			t.Fatalf("posted %+v", p)
		}
	})
	t.Run("posting events that are not messages is a 400", func(t *testing.T) {
		id := s.CreateSession("bad")
		for _, body := range []string{`{"events":[]}`, `{"events":[{"no":"type"}]}`, `{"events":[1]}`} {
			if resp := do(t, headers(), "POST", s.URL()+"/v1/sessions/"+id+"/events", body, nil); resp.StatusCode != 400 {
				t.Errorf("%s: status %d", body, resp.StatusCode)
			}
		}
	})
	t.Run("emitting to an unknown session or a non-message fails with a typed error", func(t *testing.T) {
		if err := s.Emit("session_nope", `{"type":"result"}`); !errors.Is(err, ErrNoSession) {
			t.Errorf("unknown session: %v", err)
		}
		if err := s.Emit(s.CreateSession("x"), `not json`); !errors.Is(err, ErrBadLine) {
			t.Errorf("bad line: %v", err)
		}
	})
}

func TestFailureScriptsAnswerHTTPRequests(t *testing.T) {
	tests := []struct {
		name       string
		spec       FailSpec
		status     int
		retryAfter string
	}{
		{"a scripted 401 refuses a request with good credentials", FailSpec{Status: 401}, 401, ""},
		{"a scripted 403 refuses a request", FailSpec{Status: 403}, 403, ""},
		{"a scripted 429 carries Retry-After rounded up to whole seconds", FailSpec{Status: 429, RetryAfter: 1500 * time.Millisecond}, 429, "2"},
		{"a scripted 503 refuses a request", FailSpec{Status: 503}, 503, ""},
		{"a scripted 500 on GET only matches that method", FailSpec{Method: "GET", Path: "/v1/sessions", Status: 500}, 500, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t)
			tc.spec.Times = 2
			s.Fail(tc.spec)
			for i := range 2 {
				resp := do(t, headers(), "GET", s.URL()+"/v1/sessions", "", nil)
				if resp.StatusCode != tc.status || resp.Header.Get("Retry-After") != tc.retryAfter {
					t.Fatalf("request %d: %d Retry-After %q", i, resp.StatusCode, resp.Header.Get("Retry-After"))
				}
			}
			if resp := do(t, headers(), "GET", s.URL()+"/v1/sessions", "", nil); resp.StatusCode != 200 {
				t.Fatalf("after the script ran out: %d", resp.StatusCode)
			}
		})
	}
	t.Run("a script for another path or method leaves requests alone", func(t *testing.T) {
		s := start(t)
		s.Fail(FailSpec{Path: "/v1/environment_providers", Status: 500})
		s.Fail(FailSpec{Method: "POST", Status: 500})
		if resp := do(t, headers(), "GET", s.URL()+"/v1/sessions", "", nil); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

func TestFailureScriptsEndSubscriptions(t *testing.T) {
	tests := []struct {
		name  string
		spec  FailSpec
		after int // frames the client reads before the end
		code  websocket.StatusCode
	}{
		{"a scripted 1002 closes the socket at once", FailSpec{Close: websocket.StatusProtocolError}, 0, websocket.StatusProtocolError},
		{"a scripted 4001 closes the socket after two frames", FailSpec{Close: 4001, After: 2}, 2, 4001},
		{"a scripted 4003 closes the socket", FailSpec{Close: 4003}, 0, 4003},
		{"a scripted drop ends the socket without a close frame", FailSpec{Drop: true, After: 1}, 1, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t)
			id := s.CreateSession("fail")
			for i := range 3 {
				s.Emit(id, fmt.Sprintf(`{"type":"result","uuid":"r%d"}`, i))
			}
			s.Fail(tc.spec)
			c := dial(t, s, id, true)
			for range tc.after {
				next(t, c)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, b, err := c.Read(ctx)
			if err == nil {
				t.Fatalf("read %q, want the end", b)
			}
			if got := websocket.CloseStatus(err); got != tc.code {
				t.Fatalf("close status %d, want %d (%v)", got, tc.code, err)
			}
			// The script is used up: the next socket stays open.
			c2 := dial(t, s, id, true)
			if m := next(t, c2); m.UUID != "r0" {
				t.Fatalf("second socket: %q", m.UUID)
			}
		})
	}
	t.Run("Disconnect closes every open socket of the session with the code", func(t *testing.T) {
		s := start(t)
		id := s.CreateSession("disc")
		c := dial(t, s, id, false)
		s.Disconnect(id, 4003)
		_, _, err := c.Read(context.Background())
		if websocket.CloseStatus(err) != 4003 {
			t.Fatalf("got %v", err)
		}
	})
}

func TestASlowSubscriberIsClosedWhenItsQueueIsFull(t *testing.T) {
	s := Start(t, Options{OrgUUID: org, QueueLen: 1})
	id := s.CreateSession("slow")
	c, _, err := websocket.Dial(context.Background(), s.WebSocketURL(id, false), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(-1)
	// The writer may take one frame off the queue before it blocks on the
	// unread socket, so push until the queue must have overflowed.
	big := `{"type":"result","result":"` + strings.Repeat("x", 128<<10) + `"}`
	for range 256 {
		s.Emit(id, big)
	}
	for {
		_, _, err := c.Read(context.Background())
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
				t.Fatalf("ended with %v, want 1008", err)
			}
			return
		}
	}
}
