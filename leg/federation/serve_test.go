package federation

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// A node closed while the context Serve was given lives on (a gateway
// whose federation fails at run time closes it under a live router) stops
// Serve's writes to the local leg: none is made once Close returns, and
// Serve ends.
func TestClosingANodeStopsServesWritesThoughItsContextLives(t *testing.T) {
	c := sharedCluster(t)
	tag := randomID()[:6]
	ha, hb := "shut-a-"+tag, "shut-b-"+tag
	a := join(t, c.url(0), ha)
	b := join(t, c.url(1), hb)
	var (
		calls  atomic.Int64
		closed atomic.Bool
		late   atomic.Int64 // writes begun after Close returned
	)
	local := Local{
		Sessions: func(context.Context) ([]message.Session, error) {
			return []message.Session{session("sink", "s-sink", message.ProtocolClaude)}, nil
		},
		// A leg that never answers: each write waits for its context.
		Deliver: func(ctx context.Context, m message.Message) (message.Receipt, error) {
			calls.Add(1)
			if closed.Load() {
				late.Add(1)
			}
			<-ctx.Done()
			return message.Receipt{}, ctx.Err()
		},
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = b.Serve(context.Background(), local) }() // a context that never ends
	serve(t, a, &peer{})
	ctx := testutil.Context(t, 30*time.Second)
	testutil.Eventually(t, "a lists sink", func() bool { _, ok := a.Origin("sink@"+hb, ""); return ok })
	if rc, err := a.Leg().Send(ctx, message.Message{ID: "m-shut-" + randomID(), To: "sink@" + hb, Body: "x"}); err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send: %+v, %v", rc, err)
	}
	testutil.Eventually(t, "b starts writing it", func() bool { return calls.Load() >= 1 })
	if err := b.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	closed.Store(true)
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatalf("Serve still runs after Close (%d writes, %d after Close)", calls.Load(), late.Load())
	}
	if n := late.Load(); n != 0 {
		t.Fatalf("%d writes after Close returned", n)
	}
}

// Serve does not return while its consumer's handler still runs: that
// handler could start a lane Serve no longer waits for.
func TestServeWaitsForAMessageHandlerStillRunning(t *testing.T) {
	c := sharedCluster(t)
	tag := randomID()[:6]
	ha, hb := "gate-a-"+tag, "gate-b-"+tag
	a := join(t, c.url(0), ha)
	b := join(t, c.url(1), hb)
	sctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	var (
		once     sync.Once
		overlaps atomic.Int64 // Serve had returned while a handler ran
		handled  = make(chan struct{})
	)
	b.onInbound = func(context.Context) {
		once.Do(func() {
			cancel() // Serve stops while this handler runs
			select {
			case <-served:
				overlaps.Add(1)
			case <-time.After(500 * time.Millisecond):
			}
			close(handled)
		})
	}
	p := &peer{sessions: []message.Session{session("sink", "s-sink", message.ProtocolClaude)}}
	go func() { defer close(served); _ = b.Serve(sctx, p.local()) }()
	t.Cleanup(func() { cancel(); <-served })
	serve(t, a, &peer{})
	ctx := testutil.Context(t, 30*time.Second)
	testutil.Eventually(t, "a lists sink", func() bool { _, ok := a.Origin("sink@"+hb, ""); return ok })
	if rc, err := a.Leg().Send(ctx, message.Message{ID: "m-gate-" + randomID(), To: "sink@" + hb, Body: "x"}); err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send: %+v, %v", rc, err)
	}
	select {
	case <-handled:
	case <-ctx.Done():
		t.Fatal("the message was never handled")
	}
	select {
	case <-served:
	case <-ctx.Done():
		t.Fatal("Serve did not end")
	}
	if overlaps.Load() != 0 {
		t.Fatal("Serve returned while its consumer's handler still ran")
	}
}
