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

// A held message's later outcome reaches its origin however many other
// messages came in meanwhile: its origin is the message's own sender
// host, not an entry of a bounded map that traffic can flush.
func TestAHeldMessagesLaterOutcomeReachesItsOriginAfterAFloodOfOtherMessages(t *testing.T) {
	c := sharedCluster(t)
	a := join(t, c.url(0), "flood-a")
	cc := join(t, c.url(2), "flood-c")
	pc := &peer{sessions: []message.Session{session("lead", "s-lead", message.ProtocolQwen)}, status: message.StatusHeld}
	serve(t, a, &peer{})
	serve(t, cc, pc)
	receipts := run(t, a)
	ctx := testutil.Context(t, 20*time.Second)
	testutil.Eventually(t, "a lists lead@flood-c", func() bool { _, ok := a.Origin("lead@flood-c", "s-lead"); return ok })
	m := message.Message{ID: "m-flood-" + randomID(), To: "lead@flood-c", ToSessionID: "s-lead", FromName: "alice", Body: "hi"}
	if rc, err := a.Leg().Send(ctx, m); err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send = %+v, %v", rc, err)
	}
	next := func() message.Receipt {
		t.Helper()
		select {
		case ev := <-receipts:
			return *ev.Receipt
		case <-ctx.Done():
			t.Fatal("no receipt")
			return message.Receipt{}
		}
	}
	if rc := next(); rc.MsgID != m.ID || rc.Status != message.StatusHeld {
		t.Fatalf("first receipt %+v", rc)
	}
	in := pc.received()[0]
	// As many other inbound messages as the origin map holds.
	for i := range settledWindow {
		cc.origin.Put(fmt.Sprintf("other-%d", i), "flood-x")
	}
	cc.Leg().Relay(ctx, in, message.Receipt{Status: message.StatusDelivered})
	if rc := next(); rc.MsgID != m.ID || rc.Status != message.StatusDelivered {
		t.Fatalf("after the flood %+v", rc)
	}
	// Only a message from another host is relayed: one whose sender is
	// local (or this host) is not.
	for _, from := range []string{"uds:/run/x.sock", "alice@flood-c", "flood-c", "x@not a host"} {
		if cc.relay(ctx, from, message.Receipt{MsgID: "m-local-" + randomID(), Status: message.StatusDelivered}) {
			t.Errorf("relayed a receipt of a message from %q", from)
		}
	}
}
