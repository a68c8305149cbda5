package federation

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// The receiving host's own outcome of a message (held, from its local
// leg) and a receipt relayed after it (delivered, once released) reach
// the origin in that order, even when the hold's receipt is slow to go
// out: both wait in the message's one queue.
func TestAHoldAndTheDeliveryAfterItReachTheOriginInOrder(t *testing.T) {
	c := sharedCluster(t)
	a := join(t, c.url(0), "order-a")
	cc := join(t, c.url(2), "order-c")
	holding, release := make(chan struct{}), make(chan struct{})
	cc.beforeReceipt = func(rc message.Receipt) {
		if rc.Status == message.StatusHeld {
			close(holding)
			<-release
		}
	}
	pc := &peer{sessions: []message.Session{session("lead", "s-lead", message.ProtocolQwen)}, status: message.StatusHeld}
	serve(t, a, &peer{})
	serve(t, cc, pc)
	receipts := run(t, a)
	ctx := testutil.Context(t, 20*time.Second)
	testutil.Eventually(t, "a lists lead@order-c", func() bool { _, ok := a.Origin("lead@order-c", "s-lead"); return ok })
	m := message.Message{ID: "m-order-" + randomID(), To: "lead@order-c", ToSessionID: "s-lead", FromName: "alice", Body: "hi", Time: time.Now()}
	if rc, err := a.Leg().Send(ctx, m); err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send = %+v, %v", rc, err)
	}
	select {
	case <-holding:
	case <-ctx.Done():
		t.Fatal("the hold was never settled")
	}
	// Released while the hold's receipt is still on its way out.
	if !cc.Relay(ctx, message.Receipt{MsgID: m.ID, Status: message.StatusDelivered}) {
		t.Fatal("relay did not know the message")
	}
	var statuses []message.Status
	select {
	case ev := <-receipts:
		statuses = append(statuses, ev.Receipt.Status) // the delivery overtook the hold
	case <-time.After(time.Second):
	}
	close(release)
	for len(statuses) < 2 {
		select {
		case ev := <-receipts:
			statuses = append(statuses, ev.Receipt.Status)
		case <-ctx.Done():
			t.Fatalf("receipts so far %v", statuses)
		}
	}
	if !slices.Equal(statuses, []message.Status{message.StatusHeld, message.StatusDelivered}) {
		t.Fatalf("receipts at the origin %v; want [held delivered]", statuses)
	}
}

// Receipts settled while others wait travel together in one envelope;
// each still reaches the origin once, none lost.
func TestReceiptsSettledTogetherEachReachTheOriginOnce(t *testing.T) {
	c := sharedCluster(t)
	a := join(t, c.url(0), "batch-a")
	cc := join(t, c.url(2), "batch-c")
	const n = 100
	pc := &peer{sessions: []message.Session{session("sink", "s-sink", message.ProtocolQwen)}}
	allIn := make(chan struct{})
	// Every shard holds its first receipt until all have arrived, so the
	// rest queue up behind it and go out in batches.
	cc.beforeReceipt = func(message.Receipt) { <-allIn }
	serve(t, a, &peer{})
	serve(t, cc, pc)
	receipts := run(t, a)
	ctx := testutil.Context(t, 30*time.Second)
	testutil.Eventually(t, "a lists sink@batch-c", func() bool { _, ok := a.Origin("sink@batch-c", "s-sink"); return ok })
	run := randomID() // ids the stream has not seen (it drops a repeat within two minutes)
	for i := range n {
		m := message.Message{ID: fmt.Sprint("m-batch-", run, "-", i), To: "sink@batch-c", ToSessionID: "s-sink", FromName: fmt.Sprint("s", i%8), Body: "hi", Time: time.Now()}
		if rc, err := a.Leg().Send(ctx, m); err != nil || rc.Status != message.StatusSent {
			t.Fatalf("send %d = %+v, %v", i, rc, err)
		}
	}
	testutil.Eventually(t, "c has them all", func() bool { return len(pc.received()) == n })
	close(allIn)
	seen := map[string]int{}
	for len(seen) < n {
		select {
		case ev := <-receipts:
			if ev.Receipt.Status != message.StatusDelivered {
				t.Fatalf("receipt %+v", ev.Receipt)
			}
			seen[ev.Receipt.MsgID]++
		case <-ctx.Done():
			t.Fatalf("%d of %d receipts came back", len(seen), n)
		}
	}
	select {
	case ev := <-receipts:
		seen[ev.Receipt.MsgID]++
	case <-time.After(500 * time.Millisecond):
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("%s: %d receipts", id, k)
		}
	}
}
