package stream_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/remote/stream"
)

// outcome is what a failure script must lead to on one transport.
type outcome uint8

const (
	recovers  outcome = iota + 1 // reconnects and loses nothing
	permanent                    // Run ends with a *PermanentError at once
)

func TestFailureScripts(t *testing.T) {
	tests := []struct {
		name     string
		spec     fakecloud.FailSpec
		ws, sse  outcome
		cause    stream.Cause  // of the first failure, when it recovers
		advice   string        // in the PermanentError's message
		delayMin time.Duration // least Link.Delay before the retry
	}{
		{name: "a connection dropped after two frames", spec: fakecloud.FailSpec{Drop: true, After: 2}, ws: recovers, sse: recovers, cause: stream.CauseDropped},
		{name: "a close with 1008 (too slow) after two frames", spec: fakecloud.FailSpec{Close: websocket.StatusPolicyViolation, After: 2}, ws: recovers, sse: recovers, cause: stream.CauseClosed},
		{name: "a close with 1011 (server error) after two frames", spec: fakecloud.FailSpec{Close: websocket.StatusInternalError, After: 2}, ws: recovers, sse: recovers, cause: stream.CauseClosed},
		{name: "a close with 1002 (protocol error)", spec: fakecloud.FailSpec{Close: websocket.StatusProtocolError, After: 2}, ws: permanent, sse: recovers, cause: stream.CauseClosed, advice: "upgrade"},
		{name: "a close with 4001 (unauthorised)", spec: fakecloud.FailSpec{Close: 4001, After: 2}, ws: permanent, sse: recovers, cause: stream.CauseClosed, advice: "sign in again"},
		{name: "a close with 4003 (forbidden)", spec: fakecloud.FailSpec{Close: 4003, After: 2}, ws: permanent, sse: recovers, cause: stream.CauseClosed, advice: "--remote-org"},
		{name: "401 on the dial", spec: fakecloud.FailSpec{Status: http.StatusUnauthorized}, ws: permanent, sse: permanent, advice: "sign in again"},
		{name: "403 on the dial", spec: fakecloud.FailSpec{Status: http.StatusForbidden}, ws: permanent, sse: permanent, advice: "--remote-org"},
		{name: "a redirect on the dial", spec: fakecloud.FailSpec{Status: http.StatusFound, Location: "http://127.0.0.1:9/elsewhere"}, ws: permanent, sse: permanent, advice: "redirects are not followed"},
		{name: "404 on the dial", spec: fakecloud.FailSpec{Status: http.StatusNotFound}, ws: permanent, sse: permanent, advice: "check the id"},
		{name: "429 with Retry-After on the dial", spec: fakecloud.FailSpec{Status: http.StatusTooManyRequests, RetryAfter: 2 * time.Second}, ws: recovers, sse: recovers, cause: stream.CauseStatus, delayMin: 2 * time.Second},
		{name: "500 on the dial", spec: fakecloud.FailSpec{Status: http.StatusInternalServerError}, ws: recovers, sse: recovers, cause: stream.CauseStatus},
		{name: "503 on the dial", spec: fakecloud.FailSpec{Status: http.StatusServiceUnavailable}, ws: recovers, sse: recovers, cause: stream.CauseStatus},
	}
	for _, tt := range tests {
		for _, tr := range transports {
			want := tt.ws
			if tr == stream.TransportSSE {
				want = tt.sse
			}
			name := string(tr) + ": " + tt.name
			if want == recovers {
				name += " is survived without losing or repeating an event"
			} else {
				name += " ends Run with a permanent error and no retry"
			}
			t.Run(name, func(t *testing.T) {
				c := newCloud(t, fakecloud.Options{})
				for _, id := range []string{"evt_1", "evt_2", "evt_3"} {
					c.emit(t, assistant(id, "before"))
				}
				spec := tt.spec
				spec.Path = c.streamPath(tr)
				c.Fail(spec)
				r := newRunning(t, c.config(tr))
				r.onLink = func(l stream.Link) {
					if l.State == stream.LinkReconnecting {
						r.s.Wake() // skip the wait: its length is checked below
					}
				}
				r.start()
				midStream := spec.Status == 0
				if midStream {
					// The close comes after two frames: the answer to
					// initialize and evt_4 on the WebSocket, stored events
					// on the event stream.
					r.link(stream.LinkConnected)
					c.emit(t, assistant("evt_4", "during"))
					c.emit(t, assistant("evt_5", "during"))
				}
				if want == permanent {
					checkPermanent(t, c, r, tr, tt.advice)
					return
				}
				l := r.link(stream.LinkReconnecting)
				var ce *stream.ConnError
				if !errors.As(l.Err, &ce) || ce.Cause != tt.cause {
					t.Fatalf("first failure %v (%T), want cause %v", l.Err, l.Err, tt.cause)
				}
				if l.Delay < tt.delayMin {
					t.Errorf("retry delay %v, want at least the server's %v", l.Delay, tt.delayMin)
				}
				if tt.delayMin > 0 && ce.RetryAfter != tt.delayMin {
					t.Errorf("RetryAfter = %v, want %v", ce.RetryAfter, tt.delayMin)
				}
				r.link(stream.LinkConnected)
				c.emit(t, assistant("evt_6", "after"))
				r.collect(c.stored(t))
				r.sentinel(c, "evt_sentinel")
				if st := r.s.Stats(); st.Reconnects < 1 && midStream {
					t.Errorf("stats %+v, want a reconnect", st)
				}
			})
		}
	}
}

// checkPermanent waits for Run to end with a *PermanentError carrying
// advice, after exactly one attempt.
func checkPermanent(t *testing.T, c *cloud, r *running, tr stream.Transport, advice string) {
	t.Helper()
	err := r.result()
	var pe *stream.PermanentError
	if !errors.As(err, &pe) {
		t.Fatalf("Run = %v (%T), want a *PermanentError", err, err)
	}
	if pe.SessionID != c.sid || !strings.Contains(err.Error(), advice) || !strings.Contains(err.Error(), c.sid) {
		t.Errorf("error %q should name the session and say %q", err, advice)
	}
	if strings.Contains(err.Error(), "stream.") || strings.Contains(err.Error(), "wire.") || strings.Contains(err.Error(), "*") {
		t.Errorf("error %q shows Go internals", err)
	}
	if l := r.link(stream.LinkGaveUp); !errors.As(l.Err, &pe) {
		t.Errorf("gave-up link carries %v, want the permanent error", l.Err)
	}
	if q, _ := c.streamRequests(tr); len(q) != 1 {
		t.Errorf("%d connection attempts, want 1", len(q))
	}
}

func TestRunGivesUpAfterMaxRetries(t *testing.T) {
	tests := []struct {
		name  string
		spec  fakecloud.FailSpec
		cause stream.Cause
		text  string
	}{
		{"every dial answered 503", fakecloud.FailSpec{Status: http.StatusServiceUnavailable, Times: 100}, stream.CauseStatus, "HTTP 503 Service Unavailable: api_error: scripted failure"},
		{"every connection closed before its first frame", fakecloud.FailSpec{Close: websocket.StatusInternalError, Times: 100}, stream.CauseClosed, "closed by the server"},
	}
	for _, tt := range tests {
		for _, tr := range transports {
			t.Run(string(tr)+": "+tt.name+" gives up after three attempts and says what to do", func(t *testing.T) {
				c := newCloud(t, fakecloud.Options{})
				spec := tt.spec
				spec.Path = c.streamPath(tr)
				c.Fail(spec)
				cfg := c.config(tr)
				cfg.MaxRetries = 3
				cfg.Initialize = false // an answer to initialize would be a frame
				r := startStream(t, cfg)
				err := r.result()
				var ge *stream.GiveUpError
				if !errors.As(err, &ge) {
					t.Fatalf("Run = %v (%T), want a *GiveUpError", err, err)
				}
				var ce *stream.ConnError
				if !errors.As(err, &ce) || ce.Cause != tt.cause {
					t.Fatalf("last failure %v, want cause %v", ge.Last, tt.cause)
				}
				msg := err.Error()
				for _, want := range []string{"remote session " + c.sid, "gave up after 3 failed connection attempts in a row", tt.text, "check the network"} {
					if !strings.Contains(msg, want) {
						t.Errorf("error %q does not say %q", msg, want)
					}
				}
				if ge.Attempts != 3 {
					t.Errorf("Attempts = %d, want 3", ge.Attempts)
				}
				var attempts []int
				for range 2 {
					attempts = append(attempts, r.link(stream.LinkReconnecting).Attempt)
				}
				if attempts[0] != 1 || attempts[1] != 2 {
					t.Errorf("reconnecting attempts %v, want [1 2]", attempts)
				}
				if l := r.link(stream.LinkGaveUp); l.Attempt != 3 || !errors.As(l.Err, &ge) {
					t.Errorf("gave-up link %+v", l)
				}
				if q, _ := c.streamRequests(tr); len(q) != 3 {
					t.Errorf("%d connection attempts, want 3", len(q))
				}
			})
		}
	}
}

func TestAServerThatClosesRightAfterInitializeIsGivenUpOn(t *testing.T) {
	// The answer to our own initialize does not make a connection healthy:
	// otherwise this server would be retried for ever.
	c := newCloud(t, fakecloud.Options{})
	c.Fail(fakecloud.FailSpec{Path: c.streamPath(stream.TransportWS), Close: websocket.StatusInternalError, After: 1, Times: 100})
	cfg := c.config(stream.TransportWS)
	cfg.MaxRetries = 3
	r := startStream(t, cfg)
	var ge *stream.GiveUpError
	if err := r.result(); !errors.As(err, &ge) || ge.Attempts != 3 {
		t.Fatalf("Run = %v, want a *GiveUpError after 3 attempts", err)
	}
}

// closingWSServer accepts every subscribe WebSocket, sends it frames, one
// message each, then closes it as the script says: a nil frame ends the
// connection, and until then the test hands the frames in one by one.
func closingWSServer(t *testing.T, frames chan []byte) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := c.CloseRead(r.Context()) // ends when the client goes
		for {
			select {
			case <-ctx.Done():
				return
			case f := <-frames:
				if f == nil {
					c.Close(websocket.StatusGoingAway, "bye")
					return
				}
				if c.Write(ctx, websocket.MessageText, f) != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func TestAServerThatSendsOnlyKeepAlivesAndClosesIsGivenUpOn(t *testing.T) {
	// A keep-alive, a ping or a frame that does not decode is liveness,
	// not a message: counted healthy, such a server would be reconnected
	// every second or two for ever, each time reading a page of History.
	tests := []struct {
		name  string
		tr    stream.Transport
		frame string
	}{
		{"a keep_alive line", stream.TransportWS, `{"type":"keep_alive"}`},
		{"a line that does not decode", stream.TransportWS, `not json`},
		{"a ping comment", stream.TransportSSE, ": ping\n\n"},
		{"an event that does not decode", stream.TransportSSE, "data: {\"sequence_num\":1,\"payload\":[1]}\n\n"},
	}
	for _, tt := range tests {
		t.Run(string(tt.tr)+": "+tt.name+" then a close", func(t *testing.T) {
			var cfg stream.Config
			switch tt.tr {
			case stream.TransportSSE:
				replies := make([]sseReply, 20)
				for i := range replies {
					replies[i] = sseReply{body: []string{tt.frame}} // then a clean end
				}
				cfg = sseConfig(newSSEServer(t, replies...).URL)
			default:
				frames := make(chan []byte, 40)
				for range 20 {
					frames <- []byte(tt.frame)
					frames <- nil
				}
				cfg = stream.NewConfig(closingWSServer(t, frames).URL, org, "session_1")
				cfg.Backoff = clock.Backoff{Initial: time.Millisecond, Max: time.Millisecond}
				cfg.Initialize = false
			}
			cfg.MaxRetries = 3
			r := startStream(t, cfg)
			var ge *stream.GiveUpError
			if err := r.result(); !errors.As(err, &ge) || ge.Attempts != 3 {
				t.Fatalf("Run = %v, want a *GiveUpError after 3 attempts", err)
			}
			if st := r.s.Stats(); st.Frames < 3 {
				t.Errorf("%d frames read, want the server's frame on each connection", st.Frames)
			}
		})
	}
}

func TestAConnectionKeepAlivesKeptUpForAMinuteIsHealthy(t *testing.T) {
	// A server may close idle streams on a schedule: an idle session whose
	// connections each lived on keep-alives must not give up.
	frames := make(chan []byte, 8)
	cfg := stream.NewConfig(closingWSServer(t, frames).URL, org, "session_1")
	clk := fakeTime(&cfg)
	cfg.Initialize, cfg.MaxRetries = false, 1
	r := newRunning(t, cfg)
	wakeOnReconnect(r)
	r.start()
	r.link(stream.LinkConnected)
	frames <- []byte(`{"type":"keep_alive"}`)
	testutil.EventuallyWithin(t, patience, "the first keep-alive read", func() bool { return r.s.Stats().Frames == 1 })
	clk.Advance(time.Minute)
	frames <- []byte(`{"type":"keep_alive"}`)
	testutil.EventuallyWithin(t, patience, "the second keep-alive read", func() bool { return r.s.Stats().Frames == 2 })
	frames <- nil
	if l := r.link(stream.LinkReconnecting); l.Attempt != 0 {
		t.Fatalf("attempt %d after a connection kept up for a minute, want 0 (healthy)", l.Attempt)
	}
	r.link(stream.LinkConnected)
}

func TestAConnectionThatDeliveredResetsTheRetryCount(t *testing.T) {
	// Four connections in a row close after their first event: each
	// delivered something, so none counts towards MaxRetries (2).
	for _, tr := range transports {
		t.Run(string(tr)+" keeps reconnecting while each connection delivers", func(t *testing.T) {
			c := newCloud(t, fakecloud.Options{})
			c.emit(t, assistant("evt_0", "stored"))
			after := 1
			if tr == stream.TransportWS {
				after = 2 // the answer to initialize, which does not count, and an event
			}
			c.Fail(fakecloud.FailSpec{Path: c.streamPath(tr), Close: websocket.StatusInternalError, After: after, Times: 4})
			cfg := c.config(tr)
			cfg.MaxRetries = 2
			r := startStream(t, cfg)
			for i := range 4 {
				// Each connection sends an event (stored, replayed or just
				// emitted) and closes.
				r.link(stream.LinkConnected)
				c.emit(t, assistant(fmt.Sprintf("evt_%d", i+1), "next"))
				if l := r.link(stream.LinkReconnecting); l.Attempt != 0 {
					t.Fatalf("attempt %d after a connection that delivered, want 0", l.Attempt)
				}
			}
			r.link(stream.LinkConnected)
			r.collect(c.stored(t))
			r.sentinel(c, "evt_sentinel")
		})
	}
}

func TestCredentialsAreAskedForEveryDial(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr)+" calls Header before each attempt and retries when it fails", func(t *testing.T) {
			c := newCloud(t, fakecloud.Options{})
			cfg := c.config(tr)
			var calls atomic.Int32
			cfg.Header = func(context.Context) (http.Header, error) {
				if calls.Add(1) == 1 {
					return nil, errors.New("token file is being rewritten")
				}
				return headers(), nil
			}
			r := startStream(t, cfg)
			l := r.link(stream.LinkReconnecting)
			var ce *stream.ConnError
			if !errors.As(l.Err, &ce) || ce.Cause != stream.CauseCredentials || !strings.Contains(l.Err.Error(), "token file") {
				t.Fatalf("first failure %v, want the credentials error", l.Err)
			}
			r.link(stream.LinkConnected)
			c.Disconnect(c.sid, 0)
			r.link(stream.LinkConnected)
			if n := calls.Load(); n != 3 {
				t.Fatalf("Header called %d times for 3 attempts", n)
			}
		})
	}
}
