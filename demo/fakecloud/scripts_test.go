package fakecloud

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/testkit/clock"
)

// quiet is how long a test listens to be sure a silent connection stays
// silent. With keep-alives or pings every few milliseconds, a connection
// that is not silent speaks many times within it.
const quiet = 300 * time.Millisecond

// reader reads a WebSocket in the background, as a Ping needs.
type wsFrame struct {
	data []byte
	err  error
}

func readAll(c *websocket.Conn) <-chan wsFrame {
	ch := make(chan wsFrame, 64)
	go func() {
		defer close(ch)
		for {
			_, b, err := c.Read(context.Background())
			ch <- wsFrame{b, err}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

func TestAStalledSocketSendsNothingAndHoldsOn(t *testing.T) {
	tests := []struct {
		name  string
		stall bool
	}{
		{"an unstalled socket keeps talking and answers a Ping", false},
		{"a stalled socket sends no frame, keep-alive or pong until the client hangs up", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, Options{OrgUUID: org, KeepAlive: 5 * time.Millisecond})
			id := s.CreateSession("stall")
			for i := range 3 {
				s.Emit(id, fmt.Sprintf(`{"type":"result","uuid":"r%d"}`, i))
			}
			if tc.stall {
				s.Fail(FailSpec{Stall: true, After: 2})
			}
			c, _, err := websocket.Dial(context.Background(), s.WebSocketURL(id, true), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			frames := readAll(c)
			for _, want := range []string{"r0", "r1"} {
				f := <-frames
				if m, err := wire.Decode(f.data); err != nil || m.UUID != want {
					t.Fatalf("frame %q %v, want %s", f.data, f.err, want)
				}
			}
			s.Emit(id, `{"type":"result","uuid":"late"}`)
			ctx, cancel := context.WithTimeout(context.Background(), quiet)
			pingErr := c.Ping(ctx)
			cancel()
			select {
			case f := <-frames:
				if tc.stall {
					t.Fatalf("a stalled socket sent %q (%v)", f.data, f.err)
				}
			case <-time.After(quiet):
				if !tc.stall {
					t.Fatal("an unstalled socket sent nothing")
				}
			}
			if (pingErr != nil) != tc.stall {
				t.Fatalf("ping: %v", pingErr)
			}
			if s.Subscribers(id) != 1 {
				t.Fatalf("the server let go of the socket (%d subscribers)", s.Subscribers(id))
			}
			c.CloseNow()
			testutil.Eventually(t, "the server sees the client go", func() bool { return s.Subscribers(id) == 0 })
		})
	}
	t.Run("closing the server ends a stalled socket", func(t *testing.T) {
		s, err := Listen(Options{OrgUUID: org})
		if err != nil {
			t.Fatal(err)
		}
		id := s.CreateSession("stall")
		s.Fail(FailSpec{Stall: true})
		c, _, err := websocket.Dial(context.Background(), s.WebSocketURL(id, false), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		frames := readAll(c)
		s.Close()
		if f := <-frames; f.err == nil {
			t.Fatalf("read %q after Close", f.data)
		}
	})
	t.Run("Disconnect ends a stalled socket", func(t *testing.T) {
		s := Start(t, Options{OrgUUID: org})
		id := s.CreateSession("stall")
		s.Fail(FailSpec{Stall: true})
		c, _, err := websocket.Dial(context.Background(), s.WebSocketURL(id, false), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		frames := readAll(c)
		s.Disconnect(id, 4001)
		if f := <-frames; f.err == nil {
			t.Fatalf("read %q after Disconnect", f.data)
		}
	})
}

func TestAStalledStreamSendsNothingAndHoldsOn(t *testing.T) {
	tests := []struct {
		name  string
		stall bool
	}{
		{"an unstalled stream keeps sending pings", false},
		{"a stalled stream sends no event and no ping until the client hangs up", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, id := seeded(t, Options{PingInterval: 5 * time.Millisecond}, 3)
			if tc.stall {
				s.Fail(FailSpec{Path: "/v1/code/sessions/", Stall: true, After: 2})
			}
			req, _ := http.NewRequest("GET", s.URL()+"/v1/code/sessions/"+id+"/events/stream", nil)
			req.Header = headers()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			rd := wire.NewSSEReader(resp.Body, wire.SSEOptions{Comments: true})
			for got := 0; got < 2; {
				ev, err := rd.Next()
				if err != nil {
					t.Fatal(err)
				}
				if !ev.Comment {
					got++
				}
			}
			s.Emit(id, assistant("late"))
			next := make(chan error, 1)
			go func() {
				for {
					ev, err := rd.Next()
					if err != nil || !ev.Comment || !tc.stall {
						next <- err
						return
					}
					// A ping already on its way before the stall is fine; a
					// stalled stream must still send nothing after it.
				}
			}()
			select {
			case err := <-next:
				if tc.stall {
					t.Fatalf("a stalled stream sent something (%v)", err)
				}
			case <-time.After(quiet):
				if !tc.stall {
					t.Fatal("an unstalled stream sent nothing")
				}
			}
			if s.Streams(id) != 1 {
				t.Fatal("the server let go of the stream")
			}
			resp.Body.Close()
			testutil.Eventually(t, "the server sees the client go", func() bool { return s.Streams(id) == 0 })
		})
	}
}

func TestDelays(t *testing.T) {
	t.Run("REST requests", func(t *testing.T) {
		tests := []struct {
			name   string
			spec   FailSpec
			status int
		}{
			{"a delay alone answers as usual, after the delay", FailSpec{Path: "/v1/sessions", Delay: time.Minute}, 200},
			{"a delay with a status answers that status after the delay", FailSpec{Path: "/v1/sessions", Delay: time.Minute, Status: 503}, 503},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				clk := clock.NewFakeClock(time.Time{})
				s := Start(t, Options{Token: token, OrgUUID: org, Clock: clk})
				s.Fail(tc.spec)
				got := make(chan int, 1)
				go func() {
					req, _ := http.NewRequest("GET", s.URL()+"/v1/sessions", nil)
					req.Header = headers()
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						got <- -1
						return
					}
					resp.Body.Close()
					got <- resp.StatusCode
				}()
				testutil.Eventually(t, "the request waits on the clock", func() bool { return clk.Pending() == 1 })
				clk.Advance(time.Minute - time.Nanosecond)
				select {
				case code := <-got:
					t.Fatalf("answered %d before the delay was up", code)
				default:
				}
				clk.Advance(time.Nanosecond)
				if code := <-got; code != tc.status {
					t.Fatalf("status %d, want %d", code, tc.status)
				}
				if resp := do(t, headers(), "GET", s.URL()+"/v1/sessions", "", nil); resp.StatusCode != 200 {
					t.Fatalf("the script was not used up: %d", resp.StatusCode)
				}
			})
		}
	})
	t.Run("a slow socket waits the delay between two frames", func(t *testing.T) {
		clk := clock.NewFakeClock(time.Time{})
		s := Start(t, Options{OrgUUID: org, Clock: clk, KeepAlive: -1})
		id := s.CreateSession("slow")
		for i := range 3 {
			s.Emit(id, fmt.Sprintf(`{"type":"result","uuid":"r%d"}`, i))
		}
		s.Fail(FailSpec{Delay: time.Second})
		c, _, err := websocket.Dial(context.Background(), s.WebSocketURL(id, true), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		frames := readAll(c)
		for i := range 3 {
			if i > 0 {
				testutil.Eventually(t, "the socket waits on the clock", func() bool { return clk.Pending() == 1 })
				select {
				case f := <-frames:
					t.Fatalf("frame %q came before the delay", f.data)
				default:
				}
				clk.Advance(time.Second)
			}
			f := <-frames
			if m, err := wire.Decode(f.data); err != nil || m.UUID != fmt.Sprintf("r%d", i) {
				t.Fatalf("frame %d: %q %v", i, f.data, f.err)
			}
		}
	})
	t.Run("a slow stream waits the delay between two events", func(t *testing.T) {
		clk := clock.NewFakeClock(time.Time{})
		s, id := seeded(t, Options{Clock: clk, PingInterval: -1}, 3)
		s.Fail(FailSpec{Path: "/v1/code/sessions/", Delay: time.Second})
		rd := openStream(t, s, id, "", nil, false)
		for i := uint64(1); i <= 3; i++ {
			if i > 1 {
				testutil.Eventually(t, "the stream waits on the clock", func() bool { return clk.Pending() == 1 })
				clk.Advance(time.Second)
			}
			if _, v := nextV2(t, rd); v.SequenceNum != i {
				t.Fatalf("event %d, want %d", v.SequenceNum, i)
			}
		}
	})
}

func TestServerKeepAlives(t *testing.T) {
	clk := clock.NewFakeClock(time.Time{})
	s := Start(t, Options{OrgUUID: org, Clock: clk, KeepAlive: 30 * time.Second})
	id := s.CreateSession("ka")
	c, _, err := websocket.Dial(context.Background(), s.WebSocketURL(id, false), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	frames := readAll(c)
	for i := range 3 {
		testutil.Eventually(t, "the keep-alive timer is set", func() bool { return clk.Pending() == 1 })
		select {
		case f := <-frames:
			t.Fatalf("frame %q before the interval", f.data)
		default:
		}
		clk.Advance(30 * time.Second)
		f := <-frames
		if string(f.data) != "{\"type\":\"keep_alive\"}\n" {
			t.Fatalf("keep-alive %d: %q %v", i, f.data, f.err)
		}
	}
}
