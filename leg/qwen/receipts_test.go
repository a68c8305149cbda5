package qwen

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

type dropRig struct {
	d   *DropReceipts
	clk *clock.FakeClock
	mu  sync.Mutex
	out []DropReceipt
}

func newDropRig(t *testing.T) *dropRig {
	r := &dropRig{clk: clock.NewFakeClock(time.Time{})}
	r.d = NewDropReceipts(r.clk, func(dr DropReceipt) { r.mu.Lock(); r.out = append(r.out, dr); r.mu.Unlock() })
	t.Cleanup(r.d.Close)
	return r
}

func (r *dropRig) take() []DropReceipt {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.out
	r.out = nil
	return out
}

func dropIn(sender, id string) Inbound {
	in := msg(sender, id, "b")
	in.Frame.ReplyToken = Token("rt-" + sender)
	return in
}

func TestDropReceipts(t *testing.T) {
	t.Run("the first drop is answered at once", func(t *testing.T) {
		r := newDropRig(t)
		r.d.Note(dropIn("a", "m1"), message.DropRateLimited)
		want := []DropReceipt{{To: "/socks/a.sock", ReplyToken: "rt-a", OrigMsgID: "m1", Reason: message.DropRateLimited}}
		if got := r.take(); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("later drops go out 5 s later as one receipt about the first of them", func(t *testing.T) {
		r := newDropRig(t)
		for i := range 4 {
			r.d.Note(dropIn("a", fmt.Sprint("m", i)), message.DropRateLimited)
		}
		r.take()
		// Literal times: the constant is what this checks.
		r.clk.Advance(4900 * time.Millisecond)
		if got := r.take(); got != nil {
			t.Fatalf("early, at 4.9 s: %+v", got)
		}
		r.clk.Advance(100 * time.Millisecond)
		got := r.take()
		want := []DropReceipt{{To: "/socks/a.sock", ReplyToken: "rt-a", OrigMsgID: "m1", Reason: message.DropRateLimited, DroppedMsgIDs: []string{"m2", "m3"}}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("reasons and senders are batched apart", func(t *testing.T) {
		r := newDropRig(t)
		r.d.Note(dropIn("a", "m1"), message.DropRateLimited)
		r.d.Note(dropIn("a", "m2"), message.DropDuplicate)
		r.d.Note(dropIn("b", "m3"), message.DropRateLimited)
		if got := r.take(); len(got) != 3 {
			t.Fatalf("got %d receipts, want 3 immediate", len(got))
		}
	})
	t.Run("an immediate receipt comes at most once a minute per sender and reason", func(t *testing.T) {
		r := newDropRig(t)
		r.d.Note(dropIn("a", "m1"), message.DropQueueFull)
		r.clk.Advance(30 * time.Second)
		r.d.Note(dropIn("a", "m2"), message.DropQueueFull)
		r.take()
		r.clk.Advance(DropReceiptTrail)
		if got := r.take(); len(got) != 1 || got[0].OrigMsgID != "m2" || got[0].DroppedMsgIDs != nil {
			t.Fatalf("got %+v", got)
		}
		r.clk.Advance(DropReportWindow)
		r.d.Note(dropIn("a", "m3"), message.DropQueueFull)
		if got := r.take(); len(got) != 1 || got[0].OrigMsgID != "m3" {
			t.Fatalf("a minute later: %+v", got)
		}
	})
	t.Run("a batch keeps at most 256 further ids", func(t *testing.T) {
		r := newDropRig(t)
		for i := range 300 {
			r.d.Note(dropIn("a", fmt.Sprint("m", i)), message.DropRateLimited)
		}
		r.clk.Advance(DropReceiptTrail)
		got := r.take()
		if len(got) != 2 || got[1].OrigMsgID != "m1" || len(got[1].DroppedMsgIDs) != MaxDroppedMsgIDs || got[1].DroppedMsgIDs[0] != "m2" {
			t.Fatalf("got %d receipts, last %+v", len(got), got[len(got)-1].OrigMsgID)
		}
		f := got[1].Frame("/me.sock")
		if f.Status != StatusDropped || f.DropReason != message.DropRateLimited || len(f.Settles()) != 257 {
			t.Fatalf("frame %+v", f)
		}
	})
	t.Run("40 receipts a minute in all; a held-back batch goes out in the next window", func(t *testing.T) {
		r := newDropRig(t)
		for i := range 41 {
			r.d.Note(dropIn(fmt.Sprint("s", i), "m"), message.DropRateLimited)
		}
		if got := r.take(); len(got) != MaxDropReceiptsPerWindow {
			t.Fatalf("%d immediate receipts", len(got))
		}
		r.clk.Advance(DropReceiptTrail)
		if got := r.take(); got != nil {
			t.Fatalf("over budget: %+v", got)
		}
		r.clk.Advance(DropReportWindow)
		if got := r.take(); len(got) != 1 || got[0].To != "/socks/s40.sock" {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("a batch the budget holds back for two minutes is abandoned", func(t *testing.T) {
		r := newDropRig(t)
		fill := func(round int) {
			for i := range MaxDropReceiptsPerWindow {
				r.d.Note(dropIn(fmt.Sprintf("r%d-%d", round, i), "m"), message.DropRateLimited)
			}
			if got := r.take(); len(got) != MaxDropReceiptsPerWindow {
				t.Fatalf("round %d: %d receipts", round, len(got))
			}
		}
		fill(0)
		r.clk.Advance(time.Second)
		r.d.Note(dropIn("late", "m"), message.DropRateLimited) // budget spent: batched
		// The batch retries at 6 s, 11 s, ...; windows roll at 60 s and 120 s,
		// and each new window is spent before the batch's next retry.
		for round, to := range []time.Duration{59 * time.Second, DropReportWindow} {
			r.clk.Advance(to)
			if got := r.take(); got != nil {
				t.Fatalf("round %d: %+v", round+1, got)
			}
			fill(round + 1)
		}
		r.clk.Advance(time.Hour)
		if got := r.take(); got != nil {
			t.Fatalf("an abandoned batch went out: %+v", got)
		}
		if r.clk.Pending() != 0 {
			t.Fatal("an abandoned batch still has a timer")
		}
	})
	t.Run("a held-back batch is kept until its first drop is 2 minutes old and abandoned then", func(t *testing.T) {
		r := newDropRig(t)
		fill := func() {
			t.Helper()
			for i := range MaxDropReceiptsPerWindow {
				r.d.Note(dropIn(fmt.Sprint("f", i, "-", r.clk.Now().Unix()), "m"), message.DropRateLimited)
			}
			if got := r.take(); len(got) != MaxDropReceiptsPerWindow {
				t.Fatalf("%d receipts", len(got))
			}
		}
		fill() // the window starting at 0 s is spent
		r.clk.Advance(3 * time.Second)
		r.d.Note(dropIn("late", "m"), message.DropRateLimited) // batched; retries at 8 s, 13 s, ..., 118 s, 123 s
		r.clk.Advance(57 * time.Second)
		fill() // at 60 s: the next window, spent too, until 120 s
		r.clk.Advance(58 * time.Second)
		if got := r.take(); got != nil {
			t.Fatalf("sent over budget: %+v", got)
		}
		if r.clk.Pending() != 1 {
			t.Fatal("at 118 s (first drop 115 s old) the batch was abandoned already")
		}
		// At 123 s the window has rolled and would take it, but its first
		// drop is 120 s old.
		r.clk.Advance(5 * time.Second)
		if got := r.take(); got != nil {
			t.Fatalf("a batch 2 minutes old went out: %+v", got)
		}
		if r.clk.Pending() != 0 {
			t.Fatal("a batch 2 minutes old still has a timer")
		}
	})
	t.Run("Flush sends what waits, budget or not", func(t *testing.T) {
		r := newDropRig(t)
		r.d.Note(dropIn("a", "m1"), message.DropRateLimited)
		r.d.Note(dropIn("a", "m2"), message.DropRateLimited)
		r.take()
		r.d.Flush()
		if got := r.take(); len(got) != 1 || got[0].OrigMsgID != "m2" {
			t.Fatalf("got %+v", got)
		}
		if r.clk.Pending() != 0 {
			t.Fatal("a timer survived Flush")
		}
	})
	t.Run("nothing goes out after Close", func(t *testing.T) {
		r := newDropRig(t)
		r.d.Note(dropIn("a", "m1"), message.DropRateLimited)
		r.d.Note(dropIn("a", "m2"), message.DropRateLimited)
		r.take()
		r.d.Close()
		r.d.Note(dropIn("b", "m3"), message.DropRateLimited)
		r.clk.Advance(time.Hour)
		r.d.Flush()
		if got := r.take(); got != nil {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("a sender without an inbox gets nothing", func(t *testing.T) {
		r := newDropRig(t)
		in := dropIn("a", "m1")
		in.Frame.From = ""
		r.d.Note(in, message.DropRateLimited)
		if got := r.take(); got != nil {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("an over-long reply token is not kept", func(t *testing.T) {
		r := newDropRig(t)
		in := dropIn("a", "m1")
		in.Frame.ReplyToken = Token(strings.Repeat("t", 257))
		r.d.Note(in, message.DropRateLimited)
		if got := r.take(); got[0].ReplyToken != "" {
			t.Fatal("kept")
		}
	})
	t.Run("past 256 keys the oldest is forgotten and its batch tried", func(t *testing.T) {
		r := newDropRig(t)
		r.d.Note(dropIn("first", "a1"), message.DropRateLimited)
		r.d.Note(dropIn("first", "a2"), message.DropRateLimited)
		for i := range maxDropKeys {
			r.d.Note(dropIn(fmt.Sprint("k", i), "m"), message.DropDuplicate)
			r.clk.Advance(DropReportWindow) // keep the budget open; first's timer fires on the way
		}
		got := r.take()
		found := false
		for _, g := range got {
			found = found || g.OrigMsgID == "a2"
		}
		if !found {
			t.Fatal("first's waiting drop was lost")
		}
		r.d.Note(dropIn("first", "a3"), message.DropRateLimited)
		if got := r.take(); len(got) != 1 || got[0].OrigMsgID != "a3" {
			t.Fatalf("a forgotten sender is not answered at once: %+v", got)
		}
	})
}
