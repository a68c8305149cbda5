package federation

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/inorder"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

func TestASendersMessagesGoToAnOrderKeepingWriterWithoutWaitingForEachWrite(t *testing.T) {
	tests := []struct {
		name   string
		queued bool // the writer says when each message has its place
		window int  // Config.LaneWindow; zero: the default
		want   int  // messages handed to it while the first write hangs
	}{
		{"a writer that keeps order is handed the next at once within a wider window", true, 16, 5},
		{"by default even a writer that keeps order gets one at a time (a crash writes at most one twice)", true, 0, 1},
		{"any other writer one message at a time", false, 16, 1},
	}
	c := sharedCluster(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := time.Now().UnixNano() % 1e6 // names of this run's own: the cluster is shared
			from, to := fmt.Sprintf("lane-a%d-%d", i, run), fmt.Sprintf("lane-c%d-%d", i, run)
			a, cc := join(t, c.url(0), from), join(t, c.url(1), to, func(c *Config) { c.LaneWindow = tt.window })
			release := make(chan struct{})
			var mu sync.Mutex
			var handed []string
			local := Local{
				Sessions: func(context.Context) ([]message.Session, error) {
					return []message.Session{session("sink", "s-sink", message.ProtocolClaude)}, nil
				},
				Deliver: func(ctx context.Context, m message.Message) (message.Receipt, error) {
					mu.Lock()
					handed = append(handed, m.Body)
					mu.Unlock()
					if tt.queued {
						inorder.Queued(ctx)
					}
					<-release // every write hangs until the test lets go
					return message.Receipt{MsgID: m.ID, Status: message.StatusDelivered}, nil
				},
			}
			sctx, cancel := context.WithCancel(context.Background())
			served := make(chan struct{})
			go func() { defer close(served); _ = cc.Serve(sctx, local) }()
			t.Cleanup(func() { cancel(); <-served })
			var once sync.Once
			letGo := func() { once.Do(func() { close(release) }) }
			t.Cleanup(letGo) // before Serve's cleanup waits for the writes
			serve(t, a, &peer{})
			ctx := testutil.Context(t, 30*time.Second)
			testutil.Eventually(t, "a lists sink", func() bool { _, ok := a.Origin("sink@"+to, ""); return ok })
			var want []string
			for k := range 5 {
				body := fmt.Sprintf("m%d", k)
				want = append(want, body)
				if rc, err := a.Leg().Send(ctx, message.Message{ID: from + "-" + body, To: "sink@" + to, FromName: "w", Body: body}); err != nil || rc.Status != message.StatusSent {
					t.Fatalf("send %s: %+v, %v", body, rc, err)
				}
			}
			got := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(handed) }
			testutil.Eventually(t, "the first write starts", func() bool { return len(got()) >= 1 })
			if tt.want > 1 {
				testutil.Eventually(t, "the rest are handed over behind it", func() bool { return len(got()) >= tt.want })
			} else {
				time.Sleep(500 * time.Millisecond) // time enough for a second hand-over, if there were one
			}
			if g := got(); len(g) != tt.want || !slices.Equal(g, want[:tt.want]) {
				t.Fatalf("handed %v while the first write hung, want %v", g, want[:tt.want])
			}
			letGo()
			testutil.Eventually(t, "all written, in order", func() bool { return slices.Equal(got(), want) })
		})
	}
}
