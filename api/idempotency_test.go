package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/idempotency"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

func sentID(t *testing.T, body []byte) string {
	t.Helper()
	var out router.Outbound
	if err := json.Unmarshal(body, &out); err != nil || out.Message.ID == "" {
		t.Fatalf("answer %s: %v", body, err)
	}
	return out.Message.ID
}

func errCode(body []byte) string {
	var e Error
	_ = json.Unmarshal(body, &e)
	return e.Code
}

func TestIdempotencyKeys(t *testing.T) {
	clk := &stepClock{now: time.Unix(1e9, 0)}
	leg := claudeStub()
	srv := NewServer(Config{Router: router.New(router.Config{}, leg), Clock: clk})
	h := srv.Handler()
	const body = `{"to":"review","text":"once only"}`

	first := postMessage(h, body, IdempotencyHeader, "k-1")
	if first.Code != http.StatusCreated || first.Header().Get(ReplayedHeader) != "" {
		t.Fatalf("first: %d %s", first.Code, first.Body.String())
	}
	id := sentID(t, first.Body.Bytes())

	t.Run("a retry with the same key and body answers the same message and sends nothing", func(t *testing.T) {
		again := postMessage(h, `{"text":"once only","to":"review","wait":false}`, IdempotencyHeader, "k-1")
		if again.Code != http.StatusCreated || sentID(t, again.Body.Bytes()) != id || again.Header().Get(ReplayedHeader) != "true" {
			t.Fatalf("retry: %d %s, want 201 with message %s", again.Code, again.Body.String(), id)
		}
		if n := len(leg.Sent()); n != 1 {
			t.Fatalf("the leg was asked to send %d times, want once", n)
		}
	})
	t.Run("the same key with another body is 422", func(t *testing.T) {
		rec := postMessage(h, `{"to":"review","text":"something else"}`, IdempotencyHeader, "k-1")
		if rec.Code != http.StatusUnprocessableEntity || errCode(rec.Body.Bytes()) != CodeKeyReused {
			t.Fatalf("%d %s, want 422 %s", rec.Code, rec.Body.String(), CodeKeyReused)
		}
	})
	t.Run("without a key every request sends", func(t *testing.T) {
		before := len(leg.Sent())
		postMessage(h, body)
		postMessage(h, body)
		if n := len(leg.Sent()) - before; n != 2 {
			t.Fatalf("%d sends, want 2", n)
		}
	})
	t.Run("a request that sent nothing leaves its key free", func(t *testing.T) {
		if rec := postMessage(h, `{"to":"nobody-here","text":"x"}`, IdempotencyHeader, "k-2"); rec.Code != http.StatusNotFound {
			t.Fatalf("%d, want 404", rec.Code)
		}
		if rec := postMessage(h, body, IdempotencyHeader, "k-2"); rec.Code != http.StatusCreated || rec.Header().Get(ReplayedHeader) != "" {
			t.Fatalf("%d %s, want a fresh 201", rec.Code, rec.Body.String())
		}
	})
	t.Run("a bad key is 400", func(t *testing.T) {
		for _, k := range []string{"with space", strings.Repeat("k", maxKeyLen+1)} {
			if rec := postMessage(h, body, IdempotencyHeader, k); rec.Code != http.StatusBadRequest {
				t.Errorf("key %q: %d, want 400", k, rec.Code)
			}
		}
	})
	t.Run("a key is forgotten after the window", func(t *testing.T) {
		clk.Add(IdempotencyWindow + time.Minute)
		rec := postMessage(h, `{"to":"review","text":"a day later"}`, IdempotencyHeader, "k-1")
		if rec.Code != http.StatusCreated || sentID(t, rec.Body.Bytes()) == id {
			t.Fatalf("%d %s, want a new message", rec.Code, rec.Body.String())
		}
	})
	t.Run("keys are capped, the oldest forgotten first", func(t *testing.T) {
		srv.keys.max = 3
		for _, k := range []string{"c-1", "c-2", "c-3", "c-4"} {
			postMessage(h, `{"to":"review","text":"`+k+`"}`, IdempotencyHeader, k)
		}
		srv.keys.mu.Lock()
		n, _, oldest := len(srv.keys.keys), len(srv.keys.order), srv.keys.order[0]
		srv.keys.mu.Unlock()
		if n != 3 || oldest != "unix c-2" {
			t.Fatalf("%d keys, oldest %q; want 3, the oldest c-2", n, oldest)
		}
	})
}

func TestIdempotencyKeysPerToken(t *testing.T) {
	srv := newTestServer()
	srv.cfg.Tokens = testTokens
	h := srv.TCPHandler(testHost)
	a := tcpDo(h, "POST", "/v1/messages", "sender", `{"to":"review","text":"x"}`, IdempotencyHeader, "shared")
	b := tcpDo(h, "POST", "/v1/messages", "tok", `{"to":"review","text":"y"}`, IdempotencyHeader, "shared")
	if a.Code != 201 || b.Code != 201 || sentID(t, a.Body.Bytes()) == sentID(t, b.Body.Bytes()) {
		t.Fatalf("%d %d: two tokens' equal keys must not meet", a.Code, b.Code)
	}
}

// openStore opens the outbox file in dir.
func openStore(t *testing.T, dir string) *outbox.Store {
	t.Helper()
	st, err := outbox.Open(filepath.Join(dir, outbox.FileName), outbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestIdempotencyKeysSurviveARestartWithTheOutbox(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	serve := func(st *outbox.Store) (http.Handler, *outbox.Leg) {
		leg, err := outbox.New(cloudStub(), outbox.Config{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		return NewServer(Config{Router: router.New(router.Config{}, claudeStub(), leg), Keys: idempotency.NewStore(st)}).Handler(), leg
	}
	const body = `{"to":"cloud","text":"exactly once"}`
	st := openStore(t, dir)
	h, _ := serve(st)
	first := postMessage(h, body, IdempotencyHeader, "retry-me")
	if first.Code != http.StatusCreated {
		t.Fatalf("%d %s", first.Code, first.Body.String())
	}
	id := sentID(t, first.Body.Bytes())
	st.Close() // the gateway dies; its answer never reached the client

	st = openStore(t, dir)
	defer st.Close()
	h, leg := serve(st)
	again := postMessage(h, body, IdempotencyHeader, "retry-me")
	if again.Code != http.StatusCreated || sentID(t, again.Body.Bytes()) != id {
		t.Fatalf("after the restart: %d %s, want 201 with message %s", again.Code, again.Body.String(), id)
	}
	items, err := leg.Outbox(true)
	if err != nil || len(items) != 1 {
		t.Fatalf("the outbox holds %d messages (%v), want the one", len(items), err)
	}
	if rec := postMessage(h, `{"to":"cloud","text":"another"}`, IdempotencyHeader, "retry-me"); rec.Code != http.StatusUnprocessableEntity {
		t.Fatalf("another body after the restart: %d, want 422", rec.Code)
	}
}

// failingKeys is a KeyStore whose writes fail.
type failingKeys struct{}

func (failingKeys) Keys() ([]idempotency.Key, error)       { return nil, nil }
func (failingKeys) PutKey(idempotency.Key, []string) error { return errors.New("input/output error") }
func (failingKeys) DeleteKey(string) error                 { return nil }

// memKeys is a KeyStore in memory: what a restart would read back.
type memKeys struct {
	mu   sync.Mutex
	keys map[string]idempotency.Key
}

func (m *memKeys) Keys() ([]idempotency.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Collect(maps.Values(m.keys)), nil
}

func (m *memKeys) PutKey(k idempotency.Key, drop []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range drop {
		delete(m.keys, d)
	}
	m.keys[k.Key] = k
	return nil
}

func (m *memKeys) DeleteKey(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.keys, key)
	return nil
}

func TestARetryAfterTheGatewayDiedMidSendSendsAgainUnderTheSameID(t *testing.T) {
	const body = `{"to":"review","text":"must arrive"}`
	before := &memKeys{keys: map[string]idempotency.Key{}}
	// The leg takes no message: the gateway dies while it is asked.
	stuck, asked := claudeStub(), make(chan struct{})
	stuck.OnSend = func(ctx context.Context, _ message.Message) (message.Receipt, error) {
		close(asked)
		<-ctx.Done()
		return message.Receipt{}, ctx.Err()
	}
	h1 := NewServer(Config{Router: router.New(router.Config{}, stuck), Keys: before}).Handler()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req := httptest.NewRequestWithContext(ctx, "POST", "/v1/messages", strings.NewReader(body))
		req.Header.Set(IdempotencyHeader, "k")
		h1.ServeHTTP(httptest.NewRecorder(), req)
	}()
	<-asked
	// The restart reads what was on disk while the send was under way.
	after := &memKeys{keys: map[string]idempotency.Key{}}
	ks, _ := before.Keys()
	for _, k := range ks {
		after.keys[k.Key] = k
	}
	if len(ks) != 1 {
		t.Fatalf("%d keys on disk mid-send, want the claimed one", len(ks))
	}
	leg := claudeStub()
	h2 := NewServer(Config{Router: router.New(router.Config{}, leg), Keys: after}).Handler()
	rec := postMessage(h2, body, IdempotencyHeader, "k")
	if rec.Code != http.StatusCreated || len(leg.Sent()) != 1 || sentID(t, rec.Body.Bytes()) != ks[0].MsgID {
		t.Fatalf("retry after the restart: %d %s, %d sends; want 201 sending %s once", rec.Code, rec.Body.String(), len(leg.Sent()), ks[0].MsgID)
	}
	if again := postMessage(h2, body, IdempotencyHeader, "k"); again.Header().Get(ReplayedHeader) != "true" || len(leg.Sent()) != 1 {
		t.Fatalf("a second retry: replayed %q, %d sends; want a replay and still one", again.Header().Get(ReplayedHeader), len(leg.Sent()))
	}
}

func TestAKeyThatCannotBeStoredSendsNothing(t *testing.T) {
	leg := claudeStub()
	h := NewServer(Config{Router: router.New(router.Config{}, leg), Keys: failingKeys{}}).Handler()
	rec := postMessage(h, `{"to":"review","text":"x"}`, IdempotencyHeader, "k")
	if rec.Code != http.StatusServiceUnavailable || errCode(rec.Body.Bytes()) != CodeNotStored || len(leg.Sent()) != 0 {
		t.Fatalf("%d %s, %d sends; want 503 %s and none", rec.Code, rec.Body.String(), len(leg.Sent()), CodeNotStored)
	}
}

func TestARetryOfAMessageTheRouterForgotSendsNothing(t *testing.T) {
	leg := claudeStub()
	h := NewServer(Config{Router: router.New(router.Config{KeepOutbound: 2}, leg)}).Handler()
	const b = `{"to":"review","text":"once only"}`
	first := postMessage(h, b, IdempotencyHeader, "k1")
	for range 3 {
		postMessage(h, `{"to":"review","text":"other"}`) // the router forgets k1's message
	}
	again := postMessage(h, b, IdempotencyHeader, "k1")
	if n := len(leg.Sent()); n != 4 {
		t.Fatalf("sent %d times, want 4", n)
	}
	var was, is router.Outbound
	_ = json.Unmarshal(first.Body.Bytes(), &was)
	_ = json.Unmarshal(again.Body.Bytes(), &is)
	if again.Code != http.StatusCreated || again.Header().Get(ReplayedHeader) != "true" || again.Header().Get(ForgottenHeader) != "true" ||
		is.Message.ID != was.Message.ID || is.Message.To != was.Message.To || is.Status != was.Status {
		t.Fatalf("retry: %d %v %s, want 201 replayed and forgotten, with %s to %s, %v", again.Code, again.Header(), again.Body.String(),
			was.Message.ID, was.Message.To, was.Status)
	}
}

func TestARetryAfterARestartOfAGatewayWithoutAnOutboxLegSendsNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	serve := func(st *outbox.Store) (http.Handler, *legtest.Fake) {
		leg := claudeStub()
		return NewServer(Config{Router: router.New(router.Config{}, leg), Keys: idempotency.NewStore(st)}).Handler(), leg
	}
	const body = `{"to":"review","text":"exactly once"}`
	st := openStore(t, dir)
	h, _ := serve(st)
	first := postMessage(h, body, IdempotencyHeader, "retry-me")
	id := sentID(t, first.Body.Bytes())
	st.Close()

	st = openStore(t, dir)
	defer st.Close()
	h, leg := serve(st)
	again := postMessage(h, body, IdempotencyHeader, "retry-me")
	var out router.Outbound
	_ = json.Unmarshal(again.Body.Bytes(), &out)
	if again.Code != http.StatusCreated || out.Message.ID != id || out.Message.To != "uds:/tmp/cc-socks/12.sock" || out.Status != message.StatusSent ||
		again.Header().Get(ForgottenHeader) != "true" || len(leg.Sent()) != 0 {
		t.Fatalf("after the restart: %d %s, %d sends; want 201 with message %s as it stood, forgotten, and no send",
			again.Code, again.Body.String(), len(leg.Sent()), id)
	}
}

func TestFailingKeyedSendsPushOutNoOtherClientsKeys(t *testing.T) {
	leg := claudeStub()
	tokens := memTokens{"other": {ID: "t_other", Scopes: Scopes(1<<ScopeRead | 1<<ScopeSend)}}
	maps.Copy(tokens, testTokens)
	srv := NewServer(Config{Router: router.New(router.Config{}, leg), Tokens: tokens, Clock: &stepClock{now: time.Unix(1e9, 0)}})
	srv.keys.max = 4
	h := srv.TCPHandler(testHost)
	post := func(token, to, key string) *httptest.ResponseRecorder {
		return tcpDo(h, "POST", "/v1/messages", token, `{"to":"`+to+`","text":"`+key+`"}`, IdempotencyHeader, key)
	}
	for _, k := range []string{"mine-1", "mine-2"} {
		if rec := post("sender", "review", k); rec.Code != http.StatusCreated {
			t.Fatalf("%s: %d %s", k, rec.Code, rec.Body.String())
		}
	}
	// Another client: many sends refused, then more accepted than its share.
	for i := range 10 {
		if rec := post("other", "nobody-here", fmt.Sprint("fail-", i)); rec.Code != http.StatusNotFound {
			t.Fatalf("%d %s, want 404", rec.Code, rec.Body.String())
		}
	}
	for i := range 5 {
		post("other", "review", fmt.Sprint("ok-", i))
	}
	before := len(leg.Sent())
	for _, k := range []string{"mine-1", "mine-2"} {
		if rec := post("sender", "review", k); rec.Code != http.StatusCreated || rec.Header().Get(ReplayedHeader) != "true" {
			t.Errorf("%s again: %d %v, want a replay", k, rec.Code, rec.Header())
		}
	}
	if n := len(leg.Sent()) - before; n != 0 {
		t.Fatalf("the retries sent %d messages, want none", n)
	}
}
