package stream_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/remote/stream"
)

// TestSoakDisconnectsAndStallsLoseNothing streams a long turn through 20
// random disruptions (dropped connections, closes with retryable codes,
// stalled connections, 5xx on the dial) and checks that every stored event
// arrives exactly once, in order, and that a permission prompt raised in
// the middle arrives once and can still be answered afterwards.
func TestSoakDisconnectsAndStallsLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("soak")
	}
	for _, tr := range transports {
		t.Run(string(tr)+" through 20 disruptions", func(t *testing.T) {
			// GATEWAY_SOAK_SEED replays a failed run's script.
			seed := uint64(time.Now().UnixNano())
			if v, err := strconv.ParseUint(os.Getenv("GATEWAY_SOAK_SEED"), 10, 64); err == nil {
				seed = v
			}
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 1))

			// Server keep-alives and pings every 20 ms keep a healthy quiet
			// connection from looking stalled; a scripted stall lasts until
			// the stream gives up on it after 200 ms.
			c := newCloud(t, fakecloud.Options{KeepAlive: 20 * time.Millisecond, PingInterval: 20 * time.Millisecond})
			cfg := c.config(tr)
			cfg.StallTimeout = 200 * time.Millisecond
			cfg.MaxRetries = -1
			r := startStream(t, cfg)
			// Before the consumer starts: link waits take updates too.
			r.link(stream.LinkConnected)

			var (
				mu      sync.Mutex
				got     []stream.Update
				prompts int
				done    = make(chan struct{})
			)
			go func() { // the consumer: keeps what carries a stored event
				defer close(done)
				for {
					select {
					case u := <-r.updates:
						mu.Lock()
						if u.Message.ControlRequest != nil && u.Message.ControlRequest.RequestID == "req_soak" {
							prompts++
						}
						if u.EventID != "" {
							got = append(got, u)
						}
						last := u.EventID == "evt_sentinel"
						mu.Unlock()
						if last {
							return
						}
					case <-time.After(patience):
						t.Errorf("the consumer waited %v for an update", patience)
						return
					}
				}
			}()

			// disrupt ends the current connection one way or another and
			// returns how many new connections that takes to recover.
			disrupt := func() (string, uint64) {
				switch rng.IntN(6) {
				case 0:
					c.Disconnect(c.sid, 0)
					return "drop", 1
				case 1:
					code := []websocket.StatusCode{websocket.StatusPolicyViolation, websocket.StatusInternalError, websocket.StatusGoingAway}[rng.IntN(3)]
					c.Disconnect(c.sid, code)
					return fmt.Sprintf("close %d", code), 1
				case 2:
					c.Fail(fakecloud.FailSpec{Path: c.streamPath(tr), Stall: true})
					c.Disconnect(c.sid, 0)
					return "stall", 2 // the stalled one, then its replacement
				case 3:
					// Stalls once a few more events went out, which the
					// rest of the turn brings.
					c.Fail(fakecloud.FailSpec{Path: c.streamPath(tr), Stall: true, After: 1 + rng.IntN(3)})
					c.Disconnect(c.sid, 0)
					return "stall later", 1
				case 4:
					c.Fail(fakecloud.FailSpec{Path: c.streamPath(tr), Status: http.StatusServiceUnavailable})
					c.Disconnect(c.sid, websocket.StatusInternalError)
					return "503", 1
				default:
					c.Fail(fakecloud.FailSpec{Path: c.streamPath(tr), Drop: true, After: 1 + rng.IntN(4)})
					c.Disconnect(c.sid, 0)
					return "drop later", 1 // which drops in its turn
				}
			}

			var script []string
			for i := range 200 {
				if i == 100 {
					c.emit(t, canUseTool("req_soak"))
				}
				// One message streamed as growing copies, as the service
				// streams one, and a result at the end of the turn.
				text := strings.Repeat("word ", i%17+1)
				c.emit(t, fmt.Sprintf(`{"type":"assistant","uuid":"evt_%03d","message":{"id":"msg_turn","role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":null}}`, i, text))
				if i%10 == 5 {
					// Events are in flight when the connection goes; the
					// turn goes on once the stream is back.
					before := r.s.Stats().Connects
					what, n := disrupt()
					script = append(script, what)
					// A script a connection raced past (one that passed the
					// check before the script was added, and was not yet
					// registered to be disconnected) waits for the next
					// connection, which may never come: a connection
					// holding "drop after 4" waits for events the test
					// only emits once this disruption is over. So a
					// script left untaken a while is taken by ending the
					// connection again; one taken is never helped.
					since := time.Now()
					if !testutil.Within(patience, func() bool {
						if c.PendingFails() == 0 {
							since = time.Now()
							return r.s.Stats().Connects >= before+n
						}
						if time.Since(since) > time.Second {
							c.Disconnect(c.sid, 0)
							since = time.Now()
						}
						return false
					}) {
						t.Fatalf("no reconnection within %v after %s (connects %d, want %d; %d scripts untaken); the stream's goroutines:\n%s",
							patience, what, r.s.Stats().Connects, before+n, c.PendingFails(), streamStacks())
					}
				}
			}
			c.emit(t, `{"type":"result","uuid":"evt_result","subtype":"success","is_error":false}`)
			t.Logf("disruptions: %s", strings.Join(script, ", "))

			// The prompt is still pending and can be answered over HTTP.
			answerPrompt(t, c, "req_soak")
			c.emit(t, assistant("evt_sentinel", "done"))
			<-done

			want := c.stored(t)
			mu.Lock()
			defer mu.Unlock()
			if len(got) != len(want) {
				t.Errorf("%d events delivered, %d stored", len(got), len(want))
			}
			seen := map[string]bool{}
			for i, u := range got {
				if seen[u.EventID] {
					t.Fatalf("event %s delivered twice", u.EventID)
				}
				seen[u.EventID] = true
				if i < len(want) && u.EventID != want[i] {
					t.Fatalf("event %d is %s, want %s", i, u.EventID, want[i])
				}
				if tr == stream.TransportSSE && u.Seq != uint64(i+1) {
					t.Fatalf("event %d has sequence %d", i, u.Seq)
				}
			}
			if prompts != 1 {
				t.Errorf("the prompt was delivered %d times, want once", prompts)
			}
			t.Logf("stats %+v", r.s.Stats())
		})
	}
}

// answerPrompt allows a pending prompt over HTTP, as the permission broker
// does, and checks the server matched it.
func answerPrompt(t *testing.T, c *cloud, requestID string) {
	t.Helper()
	pending := c.Permissions(c.sid)
	if len(pending) != 1 || pending[0].RequestID != requestID {
		t.Fatalf("pending prompts %+v, want %s", pending, requestID)
	}
	body := fmt.Sprintf(`{"events":[{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"behavior":"allow","toolUseID":"toolu_%s"}}}]}`, requestID, requestID)
	req, _ := http.NewRequest(http.MethodPost, c.URL()+"/v1/sessions/"+c.sid+"/events", strings.NewReader(body))
	req.Header = headers()
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("answer: %s", resp.Status)
	}
	answers := c.Answers(c.sid)
	if len(answers) != 1 || !answers[0].Matched {
		t.Fatalf("answers %+v, want one matching the prompt", answers)
	}
}

// streamStacks returns the stacks of the goroutines in this package, to
// show where a stream that stopped moving is waiting.
func streamStacks() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var keep []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "leg/remote/stream.") {
			keep = append(keep, g)
		}
	}
	return strings.Join(keep, "\n\n")
}
