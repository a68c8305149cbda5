package stream_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/testkit/clock"
)

// fakeTime puts cfg on a test clock, with every timer off but those a test
// turns back on, and returns the clock.
func fakeTime(cfg *stream.Config) *clock.FakeClock {
	clk := clock.NewFakeClock(time.Time{})
	cfg.Clock = clk
	cfg.KeepAlive, cfg.StallTimeout, cfg.IdleTimeout, cfg.DormantPoll = -1, -1, -1, -1
	return clk
}

// wakeOnReconnect skips every wait between attempts: on a test clock it
// would last until the test moved the clock.
func wakeOnReconnect(r *running) {
	r.onLink = func(l stream.Link) {
		if l.State == stream.LinkReconnecting {
			r.s.Wake()
		}
	}
}

func TestAStalledConnectionIsReplaced(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr)+" reconnects when nothing at all arrives for StallTimeout", func(t *testing.T) {
			c := newCloud(t, fakecloud.Options{})
			c.Fail(fakecloud.FailSpec{Path: c.streamPath(tr), Stall: true})
			cfg := c.config(tr)
			clk := fakeTime(&cfg)
			cfg.StallTimeout = 90 * time.Second
			cfg.KeepAlive = 50 * time.Second // keep-alives sent into a stall bring nothing back
			r := newRunning(t, cfg)
			wakeOnReconnect(r)
			r.start()
			r.link(stream.LinkConnected)
			clk.Advance(89 * time.Second)
			c.emit(t, assistant("evt_1", "while stalled"))
			clk.Advance(time.Second)
			l := r.link(stream.LinkReconnecting)
			var ce *stream.ConnError
			if !errors.As(l.Err, &ce) || ce.Cause != stream.CauseStalled {
				t.Fatalf("failure %v, want a stall", l.Err)
			}
			r.link(stream.LinkConnected)
			r.collect([]string{"evt_1"})
			r.sentinel(c, "evt_sentinel")
		})
	}
}

func TestKeepAlivesFromTheServerKeepAConnectionFromStalling(t *testing.T) {
	// The server's keep-alives and ": ping" comments are liveness, but
	// never delivered.
	for _, tr := range transports {
		t.Run(string(tr)+" stays connected while only keep-alives arrive", func(t *testing.T) {
			fakeServerClock := clock.NewFakeClock(time.Time{})
			c := newCloud(t, fakecloud.Options{Clock: fakeServerClock, KeepAlive: 30 * time.Second, PingInterval: 30 * time.Second})
			cfg := c.config(tr)
			cfg.Initialize = false
			clk := fakeTime(&cfg)
			cfg.StallTimeout = 90 * time.Second
			r := startStream(t, cfg)
			r.link(stream.LinkConnected)
			for range 6 { // three minutes, a keep-alive every 30 s
				before := r.s.Stats().Frames
				// The fake arms its ticker once the connection is up.
				testutil.EventuallyWithin(t, patience, "the server's keep-alive timer", func() bool { return fakeServerClock.Pending() > 0 })
				fakeServerClock.Advance(30 * time.Second)
				testutil.EventuallyWithin(t, patience, "a server keep-alive reaching the stream", func() bool { return r.s.Stats().Frames > before })
				clk.Advance(30 * time.Second)
			}
			r.sentinel(c, "evt_sentinel")
			if st := r.s.Stats(); st.Connects != 1 {
				t.Fatalf("%d connects, want the first one kept: %+v", st.Connects, st)
			}
		})
	}
}

func TestAnIdleConnectionGoesDormantUntilWoken(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr)+" disconnects after IdleTimeout without a message and reconnects on Wake", func(t *testing.T) {
			c := newCloud(t, fakecloud.Options{})
			cfg := c.config(tr)
			// No initialize: its answer is a message, and time a delivery
			// takes does not count, so one on its way would race the clock.
			cfg.Initialize = false
			clk := fakeTime(&cfg)
			cfg.IdleTimeout = 5 * time.Minute
			r := startStream(t, cfg)
			r.link(stream.LinkConnected)
			clk.Advance(5 * time.Minute)
			if l := r.link(stream.LinkDormant); l.Err != nil {
				t.Errorf("dormant link carries %v", l.Err)
			}
			testutil.EventuallyWithin(t, patience, "the connection closing", func() bool { return c.Subscribers(c.sid) == 0 })
			c.emit(t, assistant("evt_1", "while dormant"))
			r.s.Wake()
			r.link(stream.LinkConnected)
			r.collect([]string{"evt_1"})
			r.sentinel(c, "evt_sentinel")
			if st := r.s.Stats(); st.Reconnects != 1 {
				t.Errorf("stats %+v, want one reconnect", st)
			}
		})
	}
}

func TestADormantStreamReconnectsWhenHistoryHasNews(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr)+" polls History every DormantPoll and reconnects on a new event", func(t *testing.T) {
			c := newCloud(t, fakecloud.Options{})
			cfg := c.config(tr)
			hist := cfg.History.(*restHistory)
			cfg.Initialize = false // as above
			clk := fakeTime(&cfg)
			cfg.IdleTimeout, cfg.DormantPoll = 5*time.Minute, time.Minute
			r := startStream(t, cfg)
			r.link(stream.LinkConnected)
			clk.Advance(5 * time.Minute)
			r.link(stream.LinkDormant)

			calls := hist.calls.Load()
			clk.Advance(time.Minute) // a poll that finds nothing new
			testutil.EventuallyWithin(t, patience, "a poll and the next one armed", func() bool { return hist.calls.Load() > calls && clk.Pending() == 1 })
			if st := r.s.Stats(); st.Connects != 1 {
				t.Fatalf("a poll without news reconnected: %+v", st)
			}

			c.emit(t, assistant("evt_1", "news"))
			clk.Advance(time.Minute)
			r.link(stream.LinkConnected)
			r.collect([]string{"evt_1"})
			r.sentinel(c, "evt_sentinel")
		})
	}
}

func TestAConnectionNotOpenInTimeIsRetried(t *testing.T) {
	// A listener that accepts TCP and never answers: the dial hangs until
	// OpenTimeout.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range accepted {
			c.Close()
		}
	})
	for _, tr := range transports {
		t.Run(string(tr)+" counts a dial that hangs for OpenTimeout as a failed attempt", func(t *testing.T) {
			cfg := stream.NewConfig("http://"+ln.Addr().String(), org, "session_x")
			cfg.Transport = tr
			clk := fakeTime(&cfg)
			r := startStream(t, cfg)
			select {
			case <-accepted:
			case <-time.After(patience):
				t.Fatal("the stream never dialled")
			}
			clk.Advance(stream.DefaultOpenTimeout)
			l := r.link(stream.LinkReconnecting)
			var ce *stream.ConnError
			if !errors.As(l.Err, &ce) || ce.Cause != stream.CauseOpenTimeout || l.Attempt != 1 {
				t.Fatalf("link %+v, want attempt 1 failed by the open timeout", l)
			}
			if !strings.Contains(l.Err.Error(), "not open after 5s") {
				t.Errorf("error %q does not say how long it waited", l.Err)
			}
		})
	}
}

// wsServer is a hand-made subscribe endpoint: it records what the client
// sends and sends what the test gives it.
type wsServer struct {
	*httptest.Server
	got  chan string   // lines from the client
	send chan []byte   // WebSocket messages to the client
	conn chan struct{} // a client connected
}

func newWSServer(t *testing.T) *wsServer {
	s := &wsServer{got: make(chan string, 64), send: make(chan []byte, 64), conn: make(chan struct{}, 4)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		s.conn <- struct{}{}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			defer cancel()
			for {
				_, data, err := c.Read(ctx)
				if err != nil {
					return
				}
				sc := bufio.NewScanner(strings.NewReader(string(data)))
				for sc.Scan() {
					s.got <- sc.Text()
				}
			}
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-s.send:
				if c.Write(ctx, websocket.MessageText, m) != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *wsServer) line(t *testing.T) string {
	t.Helper()
	select {
	case l := <-s.got:
		return l
	case <-time.After(patience):
		t.Fatal("the client sent nothing")
	}
	return ""
}

func TestTheClientSendsInitializeThenKeepAlives(t *testing.T) {
	s := newWSServer(t)
	cfg := stream.NewConfig(s.URL, org, "session_1")
	clk := fakeTime(&cfg)
	cfg.KeepAlive = 50 * time.Second
	startStream(t, cfg)
	init := s.line(t)
	if !strings.HasPrefix(init, `{"request_id":"init-`) || !strings.HasSuffix(init, `","type":"control_request","request":{"subtype":"initialize"}}`) {
		t.Fatalf("first line %s, want the initialize control request", init)
	}
	for range 2 {
		// The keep-alive timer is armed once the connection is open.
		testutil.EventuallyWithin(t, patience, "the keep-alive timer", func() bool { return clk.Pending() == 1 })
		clk.Advance(50 * time.Second)
		if l := s.line(t); l != `{"type":"keep_alive"}` {
			t.Fatalf("line %s, want a keep_alive", l)
		}
	}
}

func TestOneWebSocketMessageMayHoldSeveralLines(t *testing.T) {
	s := newWSServer(t)
	cfg := stream.NewConfig(s.URL, org, "session_1")
	fakeTime(&cfg)
	cfg.Initialize = false
	r := startStream(t, cfg)
	r.link(stream.LinkConnected)
	s.send <- []byte(assistant("evt_1", "one") + "\n" + `{"type":"keep_alive"}` + "\r\n\n" + `not json` + "\n" + assistant("evt_2", "two"))
	s.send <- []byte(assistant("evt_3", "three") + "\n")
	r.collect([]string{"evt_1", "evt_2", "evt_3"})
	if st := r.s.Stats(); st.Malformed != 1 {
		t.Fatalf("Malformed = %d, want the one bad line", st.Malformed)
	}
}
