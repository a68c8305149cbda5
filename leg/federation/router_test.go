package federation

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// newSinkLeg is a local leg with fixed sessions: it records what it is
// sent (Sent) and reports each one delivered, as a receiver's receipt, from
// its Run.
func newSinkLeg(ss ...message.Session) *legtest.Fake {
	f := legtest.New(message.ProtocolQwen, ss...)
	receipts := make(chan message.Receipt, 64)
	f.OnSend = func(_ context.Context, m message.Message) (message.Receipt, error) {
		receipts <- message.Receipt{MsgID: m.ID, Status: message.StatusDelivered}
		return message.Receipt{MsgID: m.ID, Status: message.StatusSent}, nil
	}
	f.OnRun = func(ctx context.Context, in chan<- message.Event) error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case rc := <-receipts:
				in <- message.Event{Type: message.EventReceipt, Leg: f.Name(), Receipt: &rc}
			}
		}
	}
	return f
}

// gateway is one host as serve wires it: a router over a local leg and the
// federation leg, the node serving the router's sessions.
func gateway(t *testing.T, n *Node, local leg.Leg) *router.Router {
	t.Helper()
	rt := router.New(router.Config{Bridge: true, DefaultMode: message.ModePrompting}, local, n.Leg())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = rt.Run(ctx) })
	wg.Go(func() { _ = n.ServeRouter(ctx, rt) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return rt
}

func TestARouterSendsToAnotherHostsSessionByName(t *testing.T) {
	c := sharedCluster(t)
	a := join(t, c.url(0), "rt-a")
	cc := join(t, c.url(2), "rt-c")
	sink := newSinkLeg(session("sink", "s-sink", message.ProtocolQwen))
	ra := gateway(t, a, newSinkLeg(session("alice", "s-alice", message.ProtocolQwen)))
	gateway(t, cc, sink)
	ctx := testutil.Context(t, 20*time.Second)

	testutil.Eventually(t, "a's router lists sink.rt-c", func() bool {
		for _, s := range ra.Sessions(ctx) {
			if s.Name == "sink.rt-c" && s.Address == "sink@rt-c" && s.Host == "rt-c" {
				return true
			}
		}
		return false
	})
	out, err := ra.Send(ctx, router.SendRequest{To: "sink.rt-c", Body: "over the wire", FromName: "alice"})
	// Sent, or already delivered when the receipt came back before Send returned.
	if err != nil || out.Status != message.StatusSent && out.Status != message.StatusDelivered {
		t.Fatalf("send: %+v, %v", out, err)
	}
	done, err := ra.Wait(ctx, out.Message.ID)
	if err != nil || done.Status != message.StatusDelivered {
		t.Fatalf("wait: %+v, %v", done, err)
	}
	got := sink.Sent()
	if len(got) != 1 || got[0].Body != "over the wire" || got[0].To != "uds:/run/s-sink.sock" || got[0].From != "alice@rt-a" {
		t.Fatalf("sink got %+v", got)
	}
}
