package qwen

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// lastStatusOf is the status of the last receipt in b about msgID.
func lastStatusOf(b []byte, msgID string) string {
	last := ""
	for line := range bytes.Lines(b) {
		if !bytes.Contains(line, []byte(msgID)) {
			continue
		}
		for _, st := range []string{"delivered", "expired"} {
			if bytes.Contains(line, []byte(`"status":"`+st+`"`)) {
				last = st
			}
		}
	}
	return last
}

// The loss: a message the inbox had said "delivered" for, still waiting for
// the router when the session stopped, failed to reach it and was dropped
// with no word; the sender took it as delivered.
func TestMessagesTheRouterNeverTookEndExpiredAtShutdown(t *testing.T) {
	identity(t)
	p := registerTestPeer(t, Config{Inbound: PolicyAccept})
	out := make(chan message.Event) // never read: the router is stuck
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, out) }()
	t.Cleanup(func() { cancel(); <-done })
	own := record(t, filepath.Join(testutil.ShortTempDir(t), "own.sock"))
	tok := readRecord(t, p.RecordPath()).IPCToken
	var ids []string
	for range 2 {
		id := uuid.NewString()
		b, err := Payload(tok, UserFrame{MsgID: id, From: own.path, FromName: "x", FromMode: message.ModePrompting,
			ToSessionID: p.SessionID(), Content: "hi " + id, ReplyToken: NewIPCToken()})
		if err != nil {
			t.Fatal(err)
		}
		writeAndWait(t, p.SocketPath(), b)
		ids = append(ids, id)
	}
	if !testutil.Within(testutil.Patience, func() bool {
		b := own.bytes()
		return lastStatusOf(b, ids[0]) == "delivered" && lastStatusOf(b, ids[1]) == "delivered"
	}) {
		t.Fatalf("no delivered receipts: %q", own.bytes())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	done <- nil
	for _, id := range ids {
		if testutil.Within(testutil.Patience, func() bool { return lastStatusOf(own.bytes(), id) == "expired" }) {
			continue
		}
		t.Fatalf("message %s ended %q, never reaching the router: %q", id, lastStatusOf(own.bytes(), id), own.bytes())
	}
}

// A hold notice never makes a sender wait for the router: with a router
// that does not read, the sender still hears "held" and its connection is
// finished; the notice waits for the router's room, and is lost (counted)
// only when the session stops first.
func TestAHoldNoticeTheRouterDoesNotTakeIsCounted(t *testing.T) {
	identity(t)
	// Our review class is bypass and the frame asserts prompting: held.
	p := registerTestPeer(t, Config{Mode: message.ModeBypass})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, make(chan message.Event)) }() // never read
	t.Cleanup(func() { cancel(); <-done })
	if !testutil.Within(testutil.Patience, func() bool { return p.Ready() == nil }) {
		t.Fatal("peer never became ready")
	}
	own := record(t, filepath.Join(testutil.ShortTempDir(t), "own.sock"))
	id := uuid.NewString()
	b, err := Payload(readRecord(t, p.RecordPath()).IPCToken, UserFrame{MsgID: id, From: own.path, FromName: "x",
		FromMode: message.ModePrompting, ToSessionID: p.SessionID(), Content: "held", ReplyToken: NewIPCToken()})
	if err != nil {
		t.Fatal(err)
	}
	writeAndWait(t, p.SocketPath(), b) // the inbox finished the connection
	if !testutil.Within(testutil.Patience, func() bool {
		return bytes.Contains(own.bytes(), []byte(`"status":"held"`))
	}) {
		t.Fatalf("no held receipt: %q", own.bytes())
	}
	if n := p.NoticesLost(); n != 0 {
		t.Fatalf("NoticesLost = %d while the session runs, want 0: the notice waits", n)
	}
	cancel()
	<-done
	done <- nil // for the cleanup
	if n := p.NoticesLost(); n != 1 {
		t.Fatalf("NoticesLost = %d once it stopped, want 1", n)
	}
}
