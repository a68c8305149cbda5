package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	mcpleg "github.com/sessiongateway/gateway/leg/mcp"
)

// httpWorld serves w's MCP handler behind the API's control-socket
// handler (every scope, no rate limit: a same-user process) on loopback;
// it returns the URL of /mcp.
func httpWorld(t testing.TB, w *world) string {
	t.Helper()
	apiSrv := api.NewServer(api.Config{Router: w.rt, Token: "secret-token", MCP: w.srv.Handler()})
	ts := httptest.NewServer(apiSrv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// rpc is one raw POST to /mcp: the status, the session id it names, and
// the JSON-RPC message in its body (JSON or a single SSE event).
type rpc struct {
	status  int
	session string
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result json.RawMessage `json:"result"`
	raw    string
}

func post(t testing.TB, url, session string, body []byte) rpc {
	t.Helper()
	return postAs(t, url, "secret-token", session, body)
}

// postAs is post with a bearer token of tokenWorld.
func postAs(t testing.TB, url, token, session string, body []byte) rpc {
	t.Helper()
	req, _ := http.NewRequestWithContext(testutil.Context(t, 30*time.Second), "POST", url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(sessionHeader, session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	out := rpc{status: resp.StatusCode, session: resp.Header.Get(sessionHeader), raw: string(b)}
	data := b
	if i := bytes.Index(b, []byte("data: ")); i >= 0 {
		data, _, _ = bytes.Cut(b[i+len("data: "):], []byte("\n"))
	}
	_ = json.Unmarshal(data, &out)
	return out
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`

// open initializes a session over raw HTTP (without initialized, unless
// finish): its id, or the refusal.
func open(t testing.TB, url string, finish bool) rpc {
	t.Helper()
	return openAs(t, url, "secret-token", finish)
}

// openAs is open with a bearer token of tokenWorld.
func openAs(t testing.TB, url, token string, finish bool) rpc {
	t.Helper()
	r := postAs(t, url, token, "", []byte(initialize))
	if finish && r.session != "" {
		postAs(t, url, token, r.session, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	}
	return r
}

// tokenWorld serves w's MCP handler behind the API's TCP handler, where
// each bearer token "tok-N" is a grant of its own with every scope, and
// no rate limit; it returns the URL of /mcp.
func tokenWorld(t testing.TB, w *world) string {
	t.Helper()
	apiSrv := api.NewServer(api.Config{Router: w.rt, Token: "secret-token", Tokens: numbered{}, RateLimit: api.NoRateLimit, MCP: w.srv.Handler()})
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.Handler = apiSrv.TCPHandler(ts.Listener.Addr().String())
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// numbered grants every scope to "tok-N", each N a grant of its own.
type numbered struct{}

func (numbered) Verify(tok string) (api.Grant, bool) {
	if n, ok := strings.CutPrefix(tok, "tok-"); ok {
		return api.Grant{ID: "g-" + n, Scopes: api.AllScopes}, true
	}
	return api.Grant{}, false
}

func delAs(t *testing.T, url, token, session string) int {
	t.Helper()
	req, _ := http.NewRequest("DELETE", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(sessionHeader, session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A session past initialize always finds room in the leg's roster: the
// server opens no more sessions than the leg takes clients.
func TestTheSessionCapIsTheLegsClientCap(t *testing.T) {
	if MaxSessions != mcpleg.MaxClients {
		t.Fatalf("MaxSessions = %d, the mcp leg's MaxClients = %d: they must match", MaxSessions, mcpleg.MaxClients)
	}
}

// TestSessionsPastTheCapAreRefusedAtInitializeAndCounted opens MaxSessions
// sessions with four tokens (each its share), half of them never
// initialized: the next initialize, with a fifth token, is a JSON-RPC
// error naming the cap and what to do, counted as a drop, and a closed
// session's slot is free again at once. Before the cap the SDK kept every
// one of them for 30 idle minutes.
func TestSessionsPastTheCapAreRefusedAtInitializeAndCounted(t *testing.T) {
	w := newWorld(t)
	var mu sync.Mutex
	drops := map[string]int{}
	w.srv.cfg.Drop = func(r string) { mu.Lock(); drops[r]++; mu.Unlock() }
	url := tokenWorld(t, w)

	ids := make([]string, 0, MaxSessions)
	for i := range MaxSessions {
		tok := fmt.Sprintf("tok-%d", i/MaxSessionsPerToken)
		r := openAs(t, url, tok, i%2 == 0)
		if r.session == "" || r.Error != nil {
			t.Fatalf("session %d refused under the cap: %d %s", i, r.status, r.raw)
		}
		ids = append(ids, r.session)
	}
	if got := w.srv.Open(); got != MaxSessions {
		t.Fatalf("Open() = %d, want %d", got, MaxSessions)
	}
	over := openAs(t, url, "tok-99", false)
	if over.Error == nil || !strings.Contains(over.Error.Message, "too many MCP sessions") || !strings.Contains(over.Error.Message, "DELETE") {
		t.Fatalf("initialize past the cap: %d %s", over.status, over.raw)
	}
	if over.session != "" && delAs(t, url, "tok-99", over.session) != http.StatusNotFound {
		t.Fatalf("the refused session %s is kept", over.session)
	}
	mu.Lock()
	if drops[DropTooManySessions] != 1 {
		t.Errorf("drops = %v, want one %s", drops, DropTooManySessions)
	}
	mu.Unlock()

	if code := delAs(t, url, "tok-0", ids[0]); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	testutil.Eventually(t, "the deleted session's slot freed", func() bool { return w.srv.Open() == MaxSessions-1 })
	if r := openAs(t, url, "tok-99", true); r.session == "" || r.Error != nil {
		t.Fatalf("initialize after a DELETE: %d %s", r.status, r.raw)
	}
}

// TestOneTokenGetsAtMostItsShareOfTheSessions: one token (the control
// socket's here, every local client's) opens MaxSessionsPerToken sessions;
// its next initialize is an MCP error that says to close one or use
// another token, counted as a token-share drop, while another token still
// opens sessions; a closed session gives the first token its slot back.
// Without the share one token took all MaxSessions.
func TestOneTokenGetsAtMostItsShareOfTheSessions(t *testing.T) {
	w := newWorld(t)
	var mu sync.Mutex
	drops := map[string]int{}
	w.srv.cfg.Drop = func(r string) { mu.Lock(); drops[r]++; mu.Unlock() }
	url := tokenWorld(t, w)

	var ids []string
	for i := range MaxSessionsPerToken {
		r := openAs(t, url, "tok-a", i%2 == 0)
		if r.session == "" || r.Error != nil {
			t.Fatalf("session %d refused within the share: %d %s", i, r.status, r.raw)
		}
		ids = append(ids, r.session)
	}
	over := openAs(t, url, "tok-a", true)
	if over.Error == nil || !strings.Contains(over.Error.Message, "with this token") || !strings.Contains(over.Error.Message, "tokens add") {
		t.Fatalf("initialize past the share: %d %s", over.status, over.raw)
	}
	if r := openAs(t, url, "tok-b", true); r.session == "" || r.Error != nil {
		t.Fatalf("another token past the first one's share: %d %s", r.status, r.raw)
	}
	mu.Lock()
	if drops[DropTokenShare] != 1 || drops[DropTooManySessions] != 0 {
		t.Errorf("drops = %v, want one %s", drops, DropTokenShare)
	}
	mu.Unlock()
	if code := delAs(t, url, "tok-a", ids[0]); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	testutil.Eventually(t, "the first token's slot freed", func() bool {
		r := openAs(t, url, "tok-a", true)
		return r.session != "" && r.Error == nil
	})
}

// TestAHalfOpenSessionIsClosedAfterPendingFor: a client that sends
// initialize and never initialized holds its slot only pendingFor; one
// that finishes keeps its session.
func TestAHalfOpenSessionIsClosedAfterPendingFor(t *testing.T) {
	w := newWorld(t)
	w.srv.pendingFor = 200 * time.Millisecond
	var mu sync.Mutex
	drops := map[string]int{}
	w.srv.cfg.Drop = func(r string) { mu.Lock(); drops[r]++; mu.Unlock() }
	url := httpWorld(t, w)

	half := open(t, url, false)
	whole := open(t, url, true)
	if half.session == "" || whole.session == "" {
		t.Fatalf("sessions: %s / %s", half.raw, whole.raw)
	}
	testutil.Eventually(t, "the half-open session closed", func() bool { return w.srv.Open() == 1 })
	if r := post(t, url, half.session, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)); r.status != http.StatusNotFound {
		t.Errorf("the half-open session after pendingFor: %d %s", r.status, r.raw)
	}
	if r := post(t, url, whole.session, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)); r.Error != nil || len(r.Result) == 0 {
		t.Errorf("the initialized session after pendingFor: %d %s", r.status, r.raw)
	}
	mu.Lock()
	defer mu.Unlock()
	if drops[DropNotInitialized] != 1 {
		t.Errorf("drops = %v, want one %s", drops, DropNotInitialized)
	}
}

// TestMalformedRequestsAreJSONRPCErrorsAndTheSessionGoesOn posts what a
// hostile or broken client might into an open session: each is answered
// with a 4xx or a JSON-RPC error, never a 5xx, and the session still
// serves a good request afterwards.
func TestMalformedRequestsAreJSONRPCErrorsAndTheSessionGoesOn(t *testing.T) {
	w := newWorld(t)
	url := httpWorld(t, w)
	sid := open(t, url, true).session
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	tests := []struct {
		name, body string
		valid      bool // odd but well-formed: any answer but a 5xx
	}{
		{"garbage", "\x00\xffnot json at all", false},
		{"an empty body", "", false},
		{"a truncated object", `{"jsonrpc":"2.0","id":3,"method":"tools/li`, false},
		{"a bare number", `42`, false},
		{"no jsonrpc version", `{"id":3,"method":"tools/list"}`, false},
		{"a method of the wrong type", `{"jsonrpc":"2.0","id":3,"method":17}`, false},
		{"params of the wrong type", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"send_message"}`, false},
		{"arguments of the wrong type", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"send_message","arguments":[1,2]}}`, false},
		{"a field of the wrong type", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait_for_messages","arguments":{"max":"all","timeout_seconds":0.01}}}`, false},
		{"a huge numeric id", `{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}`, false},
		{"a huge string id", `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 1<<20) + `","method":"tools/list"}`, true},
		{"an object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, true},
		{"deep nesting in params", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_sessions","arguments":{"name":` + deep + `}}}`, false},
		{"deep nesting at the top", deep, false},
		{"an unknown method", `{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`, false},
		{"an unknown tool", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}}`, false},
		{"a batch", `[{"jsonrpc":"2.0","id":3,"method":"tools/list"},{"jsonrpc":"2.0","id":4,"method":"tools/list"}]`, true},
		{"a response nobody asked for", `{"jsonrpc":"2.0","id":99,"result":{}}`, true},
		{"initialize again", initialize, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, url, sid, []byte(tt.body))
			if r.status >= 500 {
				t.Fatalf("%d %.300s", r.status, r.raw)
			}
			if !tt.valid && r.status == http.StatusOK && r.Error == nil && !strings.Contains(r.raw, `"isError":true`) {
				t.Fatalf("answered as a success: %.300s", r.raw)
			}
			if ok := post(t, url, sid, []byte(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)); ok.Error != nil || len(ok.Result) == 0 {
				t.Fatalf("the session after it: %d %.300s", ok.status, ok.raw)
			}
		})
	}
}

// TestUnknownSessionsAndBadHeadersAreRefused: a made-up session id, a
// version header the server does not speak and a GET without a session
// are 4xx answers that open nothing.
func TestUnknownSessionsAndBadHeadersAreRefused(t *testing.T) {
	w := newWorld(t)
	url := httpWorld(t, w)
	if r := post(t, url, "no-such-session", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)); r.status != http.StatusNotFound {
		t.Errorf("an unknown session id: %d %s", r.status, r.raw)
	}
	if r := post(t, url, strings.Repeat("s", 8000), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)); r.status < 400 || r.status >= 500 {
		t.Errorf("a huge session id: %d %s", r.status, r.raw)
	}
	req, _ := http.NewRequest("POST", url, strings.NewReader(initialize))
	req.Header.Set("Authorization", "Bearer secret-token")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "1999-01-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown protocol version: %s", resp.Status)
	}
	get, _ := http.NewRequest("GET", url, nil)
	get.Header.Set("Authorization", "Bearer secret-token")
	get.Header.Set("Accept", "text/event-stream")
	resp, err = http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a GET without a session: %s", resp.Status)
	}
	if n := w.srv.Open(); n != 0 {
		t.Errorf("%d sessions open after refusals", n)
	}
}

func TestAWaitIsBoundedWhateverTheClientAsks(t *testing.T) {
	tests := []struct {
		secs float64
		want time.Duration
	}{
		{0, DefaultWait},
		{-5, DefaultWait},
		{math.NaN(), DefaultWait},
		{math.Inf(-1), DefaultWait},
		{0.25, 250 * time.Millisecond},
		{300, MaxWait},
		{1e12, MaxWait},
		{1e300, MaxWait},
		{math.Inf(1), MaxWait},
		{math.MaxFloat64, MaxWait},
	}
	for _, tt := range tests {
		if got := waitFor(tt.secs); got != tt.want {
			t.Errorf("waitFor(%v) = %v, want %v", tt.secs, got, tt.want)
		}
	}
}

// TestEachToolAndResourceNeedsItsScope: a token with every scope but the
// one a tool or resource needs is refused by it, naming the scope, and
// the same call with that scope is not refused for it.
func TestEachToolAndResourceNeedsItsScope(t *testing.T) {
	w := newWorld(t)
	all := w.connect(t, "all", api.AllScopes)
	without := map[api.Scope]*sdk.ClientSession{
		api.ScopeRead:    w.connect(t, "no-read", api.AllScopes&^(1<<api.ScopeRead)),
		api.ScopeSend:    w.connect(t, "no-send", api.AllScopes&^(1<<api.ScopeSend)),
		api.ScopeApprove: w.connect(t, "no-approve", api.AllScopes&^(1<<api.ScopeApprove)),
	}
	tools := []struct {
		tool string
		need api.Scope
		args map[string]any
	}{
		{"list_sessions", api.ScopeRead, map[string]any{}},
		{"send_message", api.ScopeSend, map[string]any{"to": "all", "text": "x"}},
		{"wait_for_messages", api.ScopeRead, map[string]any{"timeout_seconds": 0.01}},
		{"get_message_status", api.ScopeRead, map[string]any{"id": "x"}},
		{"list_permission_requests", api.ScopeRead, map[string]any{}},
		{"answer_permission_request", api.ScopeApprove, map[string]any{"id": "p1", "behavior": "allow"}},
		{"remote_session_output", api.ScopeRead, map[string]any{"session": "x"}},
		{"start_session", api.ScopeSend, map[string]any{"agent": "claude", "cwd": "/nonexistent"}},
	}
	ctx := testutil.Context(t, 30*time.Second)
	for _, tt := range tools {
		t.Run(tt.tool, func(t *testing.T) {
			want := fmt.Sprintf("lacks the %q scope", tt.need)
			if got := call(t, without[tt.need], tt.tool, tt.args, nil); !strings.Contains(got, want) {
				t.Errorf("without %v: %q", tt.need, got)
			}
			if got := call(t, all, tt.tool, tt.args, nil); strings.Contains(got, "lacks the") {
				t.Errorf("with every scope: %q", got)
			}
		})
	}
	for _, uri := range []string{SessionsURI, InboxURI} {
		if _, err := without[api.ScopeRead].ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(err.Error(), `lacks the "read" scope`) {
			t.Errorf("reading %s without read: %v", uri, err)
		}
		if _, err := all.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err != nil {
			t.Errorf("reading %s with read: %v", uri, err)
		}
	}
}
