package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/message"
)

// storedUUIDs lists the uuid of every event the fake keeps for the session.
func storedUUIDs(t *testing.T, cloud *fakecloud.Server, sid string) []string {
	t.Helper()
	c, err := sessionsapi.New(sessionsapi.Options{BaseURL: cloud.URL(), OrgUUID: e2eOrg, Token: auth.StaticToken(e2eToken)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	after := ""
	for {
		page, err := c.ListEvents(context.Background(), sid, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Data {
			var v struct {
				UUID string `json:"uuid"`
			}
			_ = json.Unmarshal(e, &v)
			ids = append(ids, v.UUID)
		}
		if !page.HasMore || len(page.Data) == 0 {
			return ids
		}
		after = page.LastID
	}
}

// TestRemoteSoak disrupts a live session 20 times while it streams turns:
// dropped connections, close frames that invite a reconnect, and
// connections that stall after a few frames. Every event the session
// stored must reach the gateway's watchers exactly once, and a permission
// prompt raised before the first disruption must still be answerable
// after the last.
func TestRemoteSoak(t *testing.T) {
	for _, tr := range transports {
		t.Run("over "+tr+", 20 disconnects and stalls lose and duplicate no event", func(t *testing.T) {
			seed := time.Now().UnixNano()
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			g := startRemoteGatewayTuned(t, tr, func(c *stream.Config) {
				c.Backoff = clock.Backoff{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond}
				c.MaxRetries = -1
				c.StallTimeout = 300 * time.Millisecond
			})
			testutil.Eventually(t, "the session is live", func() bool { return g.cloud.Subscribers(g.sid)+g.cloud.Streams(g.sid) > 0 })

			var (
				mu     sync.Mutex
				seen   = map[uint64]bool{} // hub event ids
				byUUID = map[string]int{}
			)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			watchDone := make(chan struct{})
			go func() {
				defer close(watchDone)
				g.Watch(ctx, 0, func(ev message.Event) error {
					if ev.Type != message.EventRemote || ev.Remote.SessionID != g.sid {
						return nil
					}
					mu.Lock()
					defer mu.Unlock()
					if !seen[ev.ID] {
						seen[ev.ID] = true
						byUUID[ev.Remote.UUID]++
					}
					return nil
				})
			}()

			rid, err := g.cloud.Prompt(g.sid, fakecloud.BashPrompt("go test -race ./..."))
			if err != nil {
				t.Fatal(err)
			}
			p := g.waitPrompt(t, rid)

			path := "/v1/sessions/ws/" + g.sid
			if tr == "sse" {
				path = "/v1/code/sessions/" + g.sid + "/events/stream"
			}
			turnsDone := make(chan struct{})
			go func() {
				defer close(turnsDone)
				for i := range 40 {
					if _, err := g.cloud.StreamTurn(g.sid, fakecloud.Turn{Text: fmt.Sprintf("turn %d of the soak", i), Chunks: 6}); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
			var kinds []string
			for i := range 20 {
				time.Sleep(time.Duration(20+rng.IntN(60)) * time.Millisecond)
				switch rng.IntN(4) {
				case 0:
					g.cloud.Disconnect(g.sid, 0) // dropped without a close frame
					kinds = append(kinds, "drop")
				case 1:
					g.cloud.Disconnect(g.sid, websocket.StatusInternalError)
					kinds = append(kinds, "1011")
				case 2:
					g.cloud.Disconnect(g.sid, websocket.StatusGoingAway)
					kinds = append(kinds, "1001")
				default:
					// The next connection goes silent after a few frames.
					g.cloud.Fail(fakecloud.FailSpec{Path: path, Stall: true, After: rng.IntN(4)})
					g.cloud.Disconnect(g.sid, 0)
					kinds = append(kinds, "stall")
				}
				_ = i
			}
			<-turnsDone
			t.Logf("disruptions: %s", strings.Join(kinds, " "))

			want := storedUUIDs(t, g.cloud, g.sid)
			testutil.Eventually(t, "every stored event reached the watcher", func() bool {
				mu.Lock()
				defer mu.Unlock()
				for _, id := range want {
					if byUUID[id] == 0 {
						return false
					}
				}
				return true
			})
			mu.Lock()
			var dups []string
			for id, n := range byUUID {
				if n > 1 {
					dups = append(dups, fmt.Sprintf("%s x%d", id, n))
				}
			}
			sort.Strings(dups)
			got := len(byUUID)
			mu.Unlock()
			if len(dups) > 0 {
				t.Errorf("%d events delivered more than once: %v", len(dups), dups)
			}
			if got != len(want) {
				t.Errorf("watchers saw %d distinct events, the session stored %d", got, len(want))
			}
			if len(want) < 40*8 {
				t.Fatalf("only %d events stored: the turns did not stream", len(want))
			}

			if _, errOut, code := runCLI(t, g.StateDir, "allow", p.ID); code != 0 {
				t.Fatalf("allow after the disruptions: exit %d: %s", code, errOut)
			}
			if as := g.answers(rid); len(as) != 1 || !as[0].Matched {
				t.Fatalf("answers = %+v, want one that settled the prompt", as)
			}
			cancel()
			<-watchDone
		})
	}
}
