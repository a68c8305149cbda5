package mcp

import (
	"context"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
)

func TestACursorPastTheReadMarkLosesNothing(t *testing.T) {
	b := newInbox(256)
	for _, text := range []string{"one", "two", "three"} {
		if err := b.put(message.Message{Body: text}); err != nil {
			t.Fatal(err)
		}
	}
	// A client back from an earlier connection passes that inbox's cursor.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second) // a failure returns nothing, not hangs
	defer cancel()
	got, next, fresh, err := b.take(ctx, 37, 100)
	if err != nil || len(got) != 3 || len(fresh) != 3 || next != 3 {
		t.Fatalf("take after a stale cursor: %d messages, %d fresh, next %d, %v", len(got), len(fresh), next, err)
	}
	if n := b.unread(); n != 0 {
		t.Fatalf("%d unread after reading all", n)
	}
	if err := b.put(message.Message{Body: "four"}); err != nil {
		t.Fatal(err)
	}
	if unread := b.close(); len(unread) != 1 || unread[0].Body != "four" {
		t.Fatalf("close reported %v unread, want four", unread)
	}
}

func TestAFullInboxDropsTheNewestWithAQueueFullReceipt(t *testing.T) {
	leg := NewLeg(nil)
	bob, err := leg.Join("bob", "memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range InboxSize {
		rc, _ := leg.Send(context.Background(), message.Message{ID: "m" + string(rune('a'+i%26)), To: bob.Address, Body: "x"})
		if rc.Status != message.StatusSent {
			t.Fatalf("message %d: %v", i, rc.Status)
		}
	}
	rc, _ := leg.Send(context.Background(), message.Message{ID: "over", To: bob.Address, Body: "x"})
	if rc.Status != message.StatusDropped || rc.DropReason != message.DropQueueFull {
		t.Fatalf("over the cap: %+v", rc)
	}
	if n := leg.Unread(bob); n != InboxSize {
		t.Fatalf("unread = %d, want %d", n, InboxSize)
	}
}

func TestALateLeaveOfAClientGoneLeavesTheNextClientOfItsNameAlone(t *testing.T) {
	leg := NewLeg(nil)
	first, err := leg.Join("bob", "memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	leg.Leave(first)
	second, err := leg.Join("bob", "memory", nil)
	if err != nil || second.Name != "bob" {
		t.Fatalf("rejoin: %+v, %v", second, err)
	}
	leg.Leave(first) // the first client's session ends a second time
	if rc, _ := leg.Send(context.Background(), message.Message{ID: "m1", To: second.Address, Body: "x"}); rc.Status != message.StatusSent {
		t.Fatalf("to the second bob: %+v", rc)
	}
	if n := leg.Unread(second); n != 1 {
		t.Fatalf("the second bob has %d unread, want 1", n)
	}
	if n := leg.Unread(first); n != 0 {
		t.Fatalf("the first bob, gone, has %d unread", n)
	}
}
