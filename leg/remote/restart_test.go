package remote

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

// syncAPI is a stubAPI safe for a running leg and the test at once.
type syncAPI struct {
	mu       sync.Mutex
	sessions []RemoteSession
	history  []json.RawMessage
}

func (a *syncAPI) EventsAfter(_ context.Context, _ string, after string) ([]json.RawMessage, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := stubAPI{history: a.history}
	return s.EventsAfter(context.Background(), "", after)
}
func (a *syncAPI) CodeEventsAfter(context.Context, string, uint64) ([]json.RawMessage, bool, error) {
	return nil, false, nil
}
func (a *syncAPI) ListSessions(context.Context) ([]RemoteSession, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions, nil
}
func (a *syncAPI) Post(context.Context, string, ...json.RawMessage) error { return nil }
func (a *syncAPI) StreamHeader(context.Context) (http.Header, error)      { return http.Header{}, nil }

func (a *syncAPI) set(f func(a *syncAPI)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
}

// wsServer refuses streams (503) until accept is set, then holds each one
// open, silent: what the session did comes from the history.
func wsServer(t *testing.T, accept *atomic.Bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !accept.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// runLeg runs l until the test ends.
func runLeg(t *testing.T, l *Leg) chan message.Event {
	in := make(chan message.Event, 256)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, in)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return in
}

// waitFor reads in until ok says yes; it fails the test after a while.
func waitFor(t *testing.T, in <-chan message.Event, what string, ok func(message.Event) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-in:
			if ok(ev) {
				return
			}
		case <-deadline:
			t.Fatalf("never got %s", what)
		}
	}
}

func gaveUp(ev message.Event) bool {
	return ev.Type == message.EventLink && ev.Link.State == stream.LinkGaveUp
}

func answerFor(who, text string) func(message.Event) bool {
	return func(ev message.Event) bool {
		return ev.Type == message.EventMessage && ev.Message.AliasOf == "uds:/run/"+who+".sock" && ev.Message.Body == text
	}
}

// aliceTurn is the history of a turn answering alice's message m-a.
func aliceTurn() []json.RawMessage {
	return []json.RawMessage{
		json.RawMessage(`{"type":"user","uuid":"` + EventUUID("m-a") + `","message":{"role":"user","content":"q"}}`),
		json.RawMessage(`{"type":"assistant","uuid":"h2","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn"}}`),
		json.RawMessage(`{"type":"result","uuid":"h3","subtype":"success","result":"answer for alice"}`),
	}
}

func sendFromAlice(t *testing.T, l *Leg) {
	t.Helper()
	m := message.Message{ID: "m-a", To: "bridge:session_01a", Body: "q", From: "uds:/run/alice.sock", FromName: "alice"}
	if _, err := l.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

func TestAStreamRestartedAfterGivingUpDeliversWhatTheSessionDidMeanwhile(t *testing.T) {
	var accept atomic.Bool
	srv := wsServer(t, &accept)
	api := &syncAPI{}
	l, err := NewLeg(LegConfig{API: api, BaseURL: srv.URL, OrgUUID: "org-1", Follow: []string{"session_01a"}, ListInterval: 20 * time.Millisecond,
		Tune: func(c *stream.Config) { c.MaxRetries = 1 }})
	if err != nil {
		t.Fatal(err)
	}
	in := runLeg(t, l)
	waitFor(t, in, "the stream giving up", gaveUp)
	// During the outage alice's message is accepted and answered.
	sendFromAlice(t, l)
	api.set(func(a *syncAPI) { a.history = aliceTurn() })
	accept.Store(true)
	waitFor(t, in, "alice's answer", answerFor("alice", "answer for alice"))
}

func TestAFollowedSessionThatLeavesTheListingAndComesBackResumesItsStream(t *testing.T) {
	var accept atomic.Bool
	accept.Store(true)
	srv := wsServer(t, &accept)
	api := &syncAPI{sessions: []RemoteSession{{ID: "session_01a", Status: "active"}}}
	l, err := NewLeg(LegConfig{API: api, BaseURL: srv.URL, OrgUUID: "org-1", Follow: []string{FollowAll}, ListInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	in := runLeg(t, l)
	waitFor(t, in, "the stream connected", func(ev message.Event) bool {
		return ev.Type == message.EventLink && ev.Link.State == stream.LinkConnected
	})
	api.set(func(a *syncAPI) { a.sessions = nil })
	for {
		l.mu.Lock()
		n := len(l.links)
		l.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	sendFromAlice(t, l)
	api.set(func(a *syncAPI) {
		a.history = aliceTurn()
		a.sessions = []RemoteSession{{ID: "session_01a", Status: "active"}}
	})
	waitFor(t, in, "alice's answer", answerFor("alice", "answer for alice"))
}

func TestAPostLongUnechoedDoesNotTakeALaterTurnsAnswer(t *testing.T) {
	now := time.Unix(1700000000, 0)
	l, err := NewLeg(LegConfig{API: &stubAPI{}, BaseURL: "http://127.0.0.1:1", Follow: []string{"session_01a"},
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	sendFromAlice(t, l) // its echo is never seen
	now = now.Add(time.Hour)
	f := &follow{prompts: newPrompts(), assistant: map[string]wire.Assistant{}}
	var got []string
	for _, raw := range aliceTurn()[1:] { // a later turn, someone else's
		for _, ev := range l.translate("session_01a", f, stream.Update{Message: decodeT(t, string(raw))}) {
			if ev.Type == message.EventMessage {
				got = append(got, ev.Message.AliasOf)
			}
		}
	}
	if len(got) != 0 {
		t.Fatalf("a turn an hour later answered %v", got)
	}
}

func TestAnEchoReadFromTheHistoryIsDeliveredAndAnswersNoLaterTurn(t *testing.T) {
	api := &stubAPI{history: aliceTurn()[:1]}
	l := newTestLeg(t, api, "session_01a")
	sendFromAlice(t, l)
	f := &follow{prompts: newPrompts(), assistant: map[string]wire.Assistant{}}
	in := make(chan message.Event, 16)
	if _, _, _, err := l.backlog(context.Background(), "session_01a", f, emitterTo(in)); err != nil {
		t.Fatal(err)
	}
	close(in)
	var delivered bool
	for ev := range in {
		delivered = delivered || ev.Type == message.EventReceipt && ev.Receipt.MsgID == "m-a" && ev.Receipt.Status == message.StatusDelivered
	}
	if !delivered {
		t.Error("the echo read from the history made no delivered receipt")
	}
	for _, raw := range aliceTurn()[1:] {
		for _, ev := range l.translate("session_01a", f, stream.Update{Message: decodeT(t, string(raw))}) {
			if ev.Type == message.EventMessage {
				t.Fatalf("a later turn answered %s", ev.Message.AliasOf)
			}
		}
	}
}
