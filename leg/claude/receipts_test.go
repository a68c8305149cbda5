package claude

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

var testReply = replyTo{path: "/r.sock", pid: 1}

type sentReceipt struct {
	reply replyTo
	f     Frame
}

func newTestReporter() (*dropReporter, *clock.FakeClock, func() []sentReceipt) {
	clk := clock.NewFakeClock(time.Unix(1_000_000, 0))
	var mu sync.Mutex
	var sent []sentReceipt
	d := newDropReporter(clk, "uds:/me.sock", func(_ context.Context, reply replyTo, f Frame) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, sentReceipt{reply, f})
	})
	return d, clk, func() []sentReceipt {
		mu.Lock()
		defer mu.Unlock()
		return append([]sentReceipt(nil), sent...)
	}
}

func TestDropReceiptsAreCoalesced(t *testing.T) {
	ctx := context.Background()
	t.Run("the first drop is reported at once and later ones in one batch", func(t *testing.T) {
		d, clk, sent := newTestReporter()
		for _, id := range []string{"a", "b", "c", "d"} {
			d.report(ctx, "from:x", testReply, id, message.DropRateLimited)
		}
		if got := sent(); len(got) != 1 || got[0].f.OrigMsgID != "a" || len(got[0].f.DroppedMsgIDs) != 0 || got[0].f.DropReason != "rate-limited" {
			t.Fatalf("before the batch: %+v", got)
		}
		// Claude Code's immediate receipt carries droppedMsgIds: [], on the wire.
		b, err := sent()[0].f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"drop_reason":"rate-limited","dropped_msg_ids":[]`) {
			t.Fatalf("immediate receipt %s lacks \"dropped_msg_ids\":[]", b)
		}
		clk.Advance(dropBatchDelay)
		got := sent()
		if len(got) != 2 {
			t.Fatalf("after the batch delay: %d receipts, want 2", len(got))
		}
		if ids := got[1].f.DroppedMsgIDs; len(ids) != 3 || ids[0] != "b" || ids[2] != "d" {
			t.Fatalf("batched ids = %v, want b c d", ids)
		}
	})
	t.Run("another reason from the same sender is reported at once", func(t *testing.T) {
		d, _, sent := newTestReporter()
		d.report(ctx, "from:x", testReply, "a", message.DropRateLimited)
		d.report(ctx, "from:x", testReply, "b", message.DropDuplicate)
		if got := sent(); len(got) != 2 {
			t.Fatalf("%d receipts, want 2", len(got))
		}
	})
	t.Run("a minute later a drop is reported at once again", func(t *testing.T) {
		d, clk, sent := newTestReporter()
		d.report(ctx, "from:x", testReply, "a", message.DropDuplicate)
		clk.Advance(dropImmediateEvery)
		d.report(ctx, "from:x", testReply, "b", message.DropDuplicate)
		if got := sent(); len(got) != 2 || got[1].f.OrigMsgID != "b" {
			t.Fatalf("receipts = %+v", got)
		}
	})
	t.Run("no more than 40 receipts go out a minute", func(t *testing.T) {
		d, _, sent := newTestReporter()
		for i := range 100 {
			d.report(ctx, "from:"+string(rune('A'+i)), testReply, "m", message.DropDuplicate)
		}
		if got := len(sent()); got != dropBudget {
			t.Fatalf("%d receipts, want %d", got, dropBudget)
		}
	})
	t.Run("an unvettable sender gets nothing", func(t *testing.T) {
		d, _, sent := newTestReporter()
		d.report(ctx, "from:x", replyTo{}, "a", message.DropDuplicate)
		if got := len(sent()); got != 0 {
			t.Fatalf("%d receipts, want 0", got)
		}
	})
	t.Run("after close nothing more is sent", func(t *testing.T) {
		d, clk, sent := newTestReporter()
		d.report(ctx, "from:x", testReply, "a", message.DropDuplicate)
		d.report(ctx, "from:x", testReply, "b", message.DropDuplicate)
		d.close()
		clk.Advance(dropBatchDelay)
		if got := len(sent()); got != 1 {
			t.Fatalf("%d receipts, want 1", got)
		}
	})
}
