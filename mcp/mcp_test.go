package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg"
	mcpleg "github.com/sessiongateway/gateway/leg/mcp"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// world is a router with the mcp leg (and any other legs) running, and
// the MCP server over it.
type world struct {
	rt  *router.Router
	leg *mcpleg.Leg
	srv *Server
}

func newWorld(t testing.TB, others ...leg.Leg) *world {
	t.Helper()
	leg := mcpleg.NewLeg(nil)
	rt := router.New(router.Config{RosterTTL: time.Millisecond}, append(others, leg)...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = rt.Run(ctx) }()
	w := &world{rt: rt, leg: leg, srv: New(Config{Router: rt, Leg: leg, Version: "test"})}
	t.Cleanup(func() { w.srv.Close(); cancel(); <-done })
	return w
}

// connect is an SDK client over an in-memory pipe, joined as name with
// the grant's scopes.
func (w *world) connect(t *testing.T, name string, scopes api.Scopes) *sdk.ClientSession {
	t.Helper()
	return w.connectWith(t, name, scopes, nil)
}

// updates is a client's options that pass each resources/updated URI to ch.
func updates(ch chan<- string) *sdk.ClientOptions {
	return &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) { ch <- req.Params.URI },
	}
}

// connectWith is connect with the client's options.
func (w *world) connectWith(t *testing.T, name string, scopes api.Scopes, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	srv := w.srv.session(name, "memory", api.Grant{ID: "t", Scopes: scopes}).srv
	ctx := testutil.Context(t, 30*time.Second)
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	c := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, opts)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	testutil.Eventually(t, name+" in the roster", func() bool { return w.listed(name) })
	return cs
}

func (w *world) listed(name string) bool {
	ss, _ := w.leg.Sessions(context.Background())
	for _, s := range ss {
		if s.Name == name {
			return true
		}
	}
	return false
}

// call calls a tool and decodes its JSON text into out; it fails the test
// on a tool error unless wantErr, and returns the error text.
func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(testutil.Context(t, 30*time.Second), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return err.Error()
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if res.IsError {
		return text
	}
	if out != nil {
		if err := json.Unmarshal([]byte(text), out); err != nil {
			t.Fatalf("%s: %v in %s", tool, err, text)
		}
	}
	return ""
}

func mustCall(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any, out any) {
	t.Helper()
	if e := call(t, cs, tool, args, out); e != "" {
		t.Fatalf("%s: %s", tool, e)
	}
}

type waited struct {
	Messages   []Inbound `json:"messages"`
	NextCursor uint64    `json:"next_cursor"`
	Unread     int       `json:"unread"`
}

func TestTwoMCPClientsMessageEachOtherByName(t *testing.T) {
	w := newWorld(t)
	alice := w.connect(t, "alice", api.AllScopes)
	bob := w.connect(t, "bob", api.AllScopes)

	var list struct{ Sessions []message.Session }
	mustCall(t, alice, "list_sessions", map[string]any{"protocol": "mcp"}, &list)
	if len(list.Sessions) != 2 || list.Sessions[0].Name != "alice" || list.Sessions[1].Name != "bob" || list.Sessions[1].Protocol != message.ProtocolMCP {
		t.Fatalf("list_sessions = %+v", list.Sessions)
	}

	var st Status
	mustCall(t, alice, "send_message", map[string]any{"to": "bob", "text": "hello bob"}, &st)
	var got waited
	mustCall(t, bob, "wait_for_messages", map[string]any{"timeout_seconds": 10}, &got)
	if len(got.Messages) != 1 || got.Messages[0].From != "alice" || got.Messages[0].Text != "hello bob" {
		t.Fatalf("bob read %+v", got)
	}
	// Read once: the same cursor reads nothing new, and the sender hears
	// it was delivered.
	var again waited
	mustCall(t, bob, "wait_for_messages", map[string]any{"timeout_seconds": 0.05, "cursor": got.NextCursor}, &again)
	if len(again.Messages) != 0 {
		t.Fatalf("read twice: %+v", again)
	}
	testutil.Eventually(t, "delivered receipt", func() bool {
		var s Status
		mustCall(t, alice, "get_message_status", map[string]any{"id": st.ID}, &s)
		return s.Status == "delivered"
	})

	mustCall(t, bob, "send_message", map[string]any{"to": got.Messages[0].From, "text": "hi alice"}, nil)
	var back waited
	mustCall(t, alice, "wait_for_messages", map[string]any{"timeout_seconds": 10}, &back)
	if len(back.Messages) != 1 || back.Messages[0].From != "bob" || back.Messages[0].Text != "hi alice" {
		t.Fatalf("alice read %+v", back)
	}
}

func TestAMessageToADisconnectedClientIsAnsweredWithAReceiptSayingSo(t *testing.T) {
	w := newWorld(t)
	alice := w.connect(t, "alice", api.AllScopes)
	bob := w.connect(t, "bob", api.AllScopes)
	if err := bob.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "bob out of the roster", func() bool { return !w.listed("bob") })
	var st Status
	mustCall(t, alice, "send_message", map[string]any{"to": "bob", "text": "are you there", "wait": true, "timeout_seconds": 10}, &st)
	if st.Status != "failed" || len(st.Receipts) == 0 || !strings.Contains(st.Receipts[len(st.Receipts)-1].Reason, "bob disconnected") {
		t.Fatalf("status = %+v", st)
	}
}

func TestUnreadMessagesOfAClientThatLeavesAreAnsweredDroppedDisconnected(t *testing.T) {
	w := newWorld(t)
	alice := w.connect(t, "alice", api.AllScopes)
	bob := w.connect(t, "bob", api.AllScopes)
	var st Status
	mustCall(t, alice, "send_message", map[string]any{"to": "bob", "text": "unread"}, &st)
	testutil.Eventually(t, "in bob's inbox", func() bool {
		ss, _ := w.leg.Sessions(context.Background())
		return len(ss) == 2 && ss[1].Name == "bob" && w.leg.Unread(ss[1]) == 1
	})
	_ = bob.Close()
	testutil.Eventually(t, "dropped receipt", func() bool {
		var s Status
		mustCall(t, alice, "get_message_status", map[string]any{"id": st.ID}, &s)
		return s.Status == "dropped" && s.Receipts[len(s.Receipts)-1].DropReason == message.DropDisconnected
	})
}

func TestNamesAreMadeUnique(t *testing.T) {
	w := newWorld(t)
	w.connect(t, "twin", api.AllScopes)
	w.connect(t, "twin-2", api.AllScopes) // taken by name, so the next twin is twin-3
	w.connect(t, "twin", api.AllScopes)
	testutil.Eventually(t, "twin-3 in the roster", func() bool { return w.listed("twin-3") })
	if n := len(w.names()); n != 3 {
		t.Fatalf("roster: %v", w.names())
	}
}

func (w *world) names() []string {
	ss, _ := w.leg.Sessions(context.Background())
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

func TestErrorsComeBackAsMCPErrorsThatSayWhatToDo(t *testing.T) {
	w := newWorld(t)
	reader := w.connect(t, "reader", api.Scopes(1<<api.ScopeRead))
	full := w.connect(t, "full", api.AllScopes)
	tests := []struct {
		name string
		cs   *sdk.ClientSession
		tool string
		args map[string]any
		want string
	}{
		{"a send without the send scope", reader, "send_message", map[string]any{"to": "full", "text": "x"}, `lacks the "send" scope`},
		{"an answer without the approve scope", reader, "answer_permission_request", map[string]any{"id": "p1", "behavior": "allow"}, `lacks the "approve" scope`},
		{"an unknown address", full, "send_message", map[string]any{"to": "nobody-here", "text": "x"}, "list_sessions"},
		{"a missing argument", full, "send_message", map[string]any{"text": "x"}, "to"},
		{"an argument of the wrong type", full, "wait_for_messages", map[string]any{"cursor": "later"}, "cursor"},
		{"an oversized text", full, "send_message", map[string]any{"to": "reader", "text": strings.Repeat("x", MaxText+1)}, "cap"},
		{"an unknown tool", full, "no_such_tool", map[string]any{}, "no_such_tool"},
		{"an unknown prompt", full, "answer_permission_request", map[string]any{"id": "p1", "behavior": "allow"}, "list_permission_requests"},
		{"an unknown message", full, "get_message_status", map[string]any{"id": "nope"}, "send_message returned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := call(t, tt.cs, tt.tool, tt.args, nil)
			if got == "" || !strings.Contains(got, tt.want) {
				t.Fatalf("error = %q, want it to mention %q", got, tt.want)
			}
		})
	}
}

func TestTheInboxResourceIsUpdatedForASubscriber(t *testing.T) {
	w := newWorld(t)
	alice := w.connect(t, "alice", api.AllScopes)
	updated := make(chan string, 8)
	bob := w.connectWith(t, "bob", api.AllScopes, updates(updated))
	ctx := testutil.Context(t, 30*time.Second)
	if err := bob.Subscribe(ctx, &sdk.SubscribeParams{URI: InboxURI}); err != nil {
		t.Fatal(err)
	}
	mustCall(t, alice, "send_message", map[string]any{"to": "bob", "text": "ping"}, nil)
	select {
	case uri := <-updated:
		if uri != InboxURI {
			t.Fatalf("updated %s", uri)
		}
	case <-ctx.Done():
		t.Fatal("no resources/updated")
	}
}

func TestStreamableHTTPNeedsAToken(t *testing.T) {
	w := newWorld(t)
	apiSrv := api.NewServer(api.Config{Router: w.rt, Token: "secret-token", Tokens: readers{}, MCP: w.srv.Handler()})
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.Handler = apiSrv.TCPHandler(ts.Listener.Addr().String())
	ts.Start()
	defer ts.Close()
	ctx := testutil.Context(t, 30*time.Second)
	dial := func(token string) (*sdk.ClientSession, error) {
		hc := &http.Client{Transport: bearer{token}}
		tr := &sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp?name=web", HTTPClient: hc}
		return sdk.NewClient(&sdk.Implementation{Name: "ignored"}, nil).Connect(ctx, tr, nil)
	}
	if _, err := dial("wrong"); err == nil {
		t.Fatal("connected with a wrong token")
	}
	cs, err := dial("secret-token")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close() // before ts.Close, which waits for the session's stream to end
	testutil.Eventually(t, "web in the roster", func() bool { return w.listed("web") })
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 8 {
		t.Fatalf("tools: %v %v", tools, err)
	}
	// Another token cannot ride the session the first one opened.
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	req, _ := http.NewRequestWithContext(rctx, "POST", ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer read-token")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("another token on the session: %s", resp.Status)
	}
	// A body over the API's cap is refused with a JSON-RPC error.
	big, _ := http.NewRequestWithContext(rctx, "POST", ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"web","text":"`+strings.Repeat("x", MaxInput)+`"}}}`))
	big.Header.Set("Authorization", "Bearer secret-token")
	big.Header.Set("Mcp-Session-Id", cs.ID())
	big.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(big)
	if err != nil {
		t.Fatal(err)
	}
	var rpc struct {
		Error struct{ Message string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&rpc)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(rpc.Error.Message, "send less") {
		t.Fatalf("an oversized body: %s %+v", resp.Status, rpc)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "web out of the roster", func() bool { return !w.listed("web") })
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// readers grants read to "read-token".
type readers struct{}

func (readers) Verify(tok string) (api.Grant, bool) {
	if tok == "read-token" {
		return api.Grant{ID: "reader", Scopes: api.Scopes(1 << api.ScopeRead)}, true
	}
	return api.Grant{}, false
}
