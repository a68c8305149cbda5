package router

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
)

func runBridge(t *testing.T, cfg Config, cl, qw *legtest.Fake) {
	t.Helper()
	cfg.Bridge, cfg.BridgeInterval = true, time.Hour
	r := New(cfg, host(cl), host(qw))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-cl.Started()
}

func waitAny(cl, qw *legtest.Fake) {
	deadline := time.Now().Add(3 * time.Second)
	for len(qw.SentAs()) == 0 && len(cl.Relayed()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// Two sessions of one process share an address; the sender's own name picks it.
func TestAForwardNamesTheSenderAmongSessionsSharingAnInbox(t *testing.T) {
	a := message.Session{Address: sharedInbox, Protocol: message.ProtocolQwen, Name: "first", SessionID: "q1"}
	b := message.Session{Address: sharedInbox, Protocol: message.ProtocolQwen, Name: "second", SessionID: "q2"}
	qw := qwenLeg(a, b)
	cl := claudeLeg(claudeWork)
	runBridge(t, Config{}, qw, cl)
	qw.Emit(t, message.Event{Type: message.EventMessage, Leg: message.ProtocolQwen, Message: &message.Message{
		ID: "m", From: sharedInbox, FromName: "second", Body: "hi", Mode: message.ModePrompting, Protocol: message.ProtocolQwen, AliasOf: claudeWork.Address, ToName: "work"}})
	waitAny(qw, cl)
	if s := cl.SentAs(); len(s) != 1 || s[0].FromName != "second" {
		t.Fatalf("forwarded %+v, want from second", s)
	}
}

// Two sessions at one address with one name: ambiguous, not the first.
func TestTwoSessionsWithOneNameAtOneInboxAreNotGuessedBetween(t *testing.T) {
	a := message.Session{Address: sharedInbox, Protocol: message.ProtocolQwen, Name: "dup", SessionID: "q1"}
	b := message.Session{Address: sharedInbox, Protocol: message.ProtocolQwen, Name: "dup", SessionID: "q2"}
	sender := message.Session{Address: "uds:/tmp/cc-socks/30.sock", Protocol: message.ProtocolClaude, Name: "lead", SessionID: "c-lead"}
	cl := claudeLeg(sender)
	qw := qwenLeg(a, b)
	runBridge(t, Config{}, cl, qw)
	cl.Emit(t, message.Event{Type: message.EventMessage, Leg: message.ProtocolClaude, Message: &message.Message{
		ID: "m", From: sender.Address, FromName: "lead", Body: "hi", Mode: message.ModePrompting, Protocol: message.ProtocolClaude, AliasOf: sharedInbox, ToName: "dup"}})
	waitAny(cl, qw)
	if len(qw.SentAs()) != 0 {
		t.Fatalf("forwarded to %+v; want no guess between two sessions named dup", qw.SentAs())
	}
}

// A message to an alias whose target BridgeOnly excludes is refused.
func TestBridgeOnlyAlsoLimitsForwards(t *testing.T) {
	sender := message.Session{Address: "uds:/tmp/cc-socks/30.sock", Protocol: message.ProtocolClaude, Name: "lead", SessionID: "c-lead"}
	cl := claudeLeg(sender)
	qw := qwenLeg(alpha, beta)
	runBridge(t, Config{BridgeOnly: []string{"alpha"}}, cl, qw)
	cl.Emit(t, message.Event{Type: message.EventMessage, Leg: message.ProtocolClaude, Message: &message.Message{
		ID: "m", From: sender.Address, FromName: "lead", Body: "hi", Mode: message.ModePrompting, Protocol: message.ProtocolClaude, AliasOf: beta.Address, ToName: "beta"}})
	waitAny(cl, qw)
	if len(qw.SentAs()) != 0 || len(cl.Relayed()) != 1 || cl.Relayed()[0].Status != message.StatusFailed {
		t.Fatalf("sends %+v relays %+v", qw.SentAs(), cl.Relayed())
	}
}

// Wait does not return on held.
func TestWaitKeepsWaitingThroughHeld(t *testing.T) {
	leg := newFake()
	r := start(t, leg)
	out, err := r.Send(context.Background(), SendRequest{To: "review", Body: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	leg.Emit(t, message.Event{Type: message.EventReceipt, Receipt: &message.Receipt{MsgID: out.Message.ID, Status: message.StatusHeld}})
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	got, err := r.Wait(ctx, out.Message.ID)
	if !errors.Is(err, context.DeadlineExceeded) || got.Status != message.StatusHeld {
		t.Fatalf("Wait = %v, %v; want to wait through held", got.Status, err)
	}
}

// Exactly KeepOutbound messages are remembered.
func TestTheRouterRemembersExactlyKeepOutboundMessages(t *testing.T) {
	r := New(Config{KeepOutbound: 2}, newFake())
	var ids []string
	for range 3 {
		out, _ := r.Send(context.Background(), SendRequest{To: "review", Body: "hi"})
		ids = append(ids, out.Message.ID)
	}
	if _, err := r.Message(ids[1]); err != nil {
		t.Fatalf("second newest forgotten with cap 2: %v", err)
	}
}

// A claimed raw address not in the cached roster is looked up afresh.
func TestARawAddressOutsideTheCachedRosterRefreshes(t *testing.T) {
	leg := newFake()
	r := New(Config{}, leg)
	ctx := context.Background()
	if _, _, err := r.Resolve(ctx, "review"); err != nil {
		t.Fatal(err)
	}
	leg.AddSession(message.Session{Address: "uds:/tmp/cc-socks/13.sock", Protocol: message.ProtocolClaude, Name: "newcomer", SessionID: "s-d", PID: 13})
	_, s, err := r.Resolve(ctx, "uds:/tmp/cc-socks/13.sock")
	if err != nil || s.Name != "newcomer" || s.PID != 13 {
		t.Fatalf("got %+v %v; want the newly listed session", s, err)
	}
}

// Another host's senders all cross one bridge at once, each forward
// waiting on a slow receiver: a burst of 64 (four times sixteen senders)
// is carried in full, none dropped as busy.
func TestABurstOfSixtyFourForwardsIsCarriedWhileTheReceiverIsSlow(t *testing.T) {
	sender := message.Session{Address: "uds:/tmp/cc-socks/30.sock", Protocol: message.ProtocolClaude, Name: "lead", SessionID: "c-lead"}
	cl := claudeLeg(sender)
	qw, gate := blocking(qwenLeg(alpha))
	r := New(Config{Bridge: true, BridgeInterval: time.Hour}, host(cl), host(qw))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	const burst = 64
	for i := range burst {
		cl.Emit(t, message.Event{Type: message.EventMessage, Leg: message.ProtocolClaude, Message: &message.Message{
			ID: fmt.Sprint("m", i), From: sender.Address, FromName: "lead", Body: fmt.Sprint("hi", i), Mode: message.ModePrompting,
			Protocol: message.ProtocolClaude, AliasOf: alpha.Address, ToName: "alpha"}})
	}
	time.Sleep(50 * time.Millisecond) // every forward is in flight, or turned away
	close(gate)
	deadline := time.Now().Add(5 * time.Second)
	for len(qw.SentAs()) < burst && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n, rel := len(qw.SentAs()), cl.Relayed(); n != burst || len(rel) != 0 {
		t.Fatalf("forwarded %d of %d, %d turned away; want all forwarded", n, burst, len(rel))
	}
}

// The sender of a forward is found in the router's recent listing: the
// Claude leg lists by probing every session's socket, which on every
// forward cost a cross-host message milliseconds. A sender the listing
// does not have yet is looked up on its leg.
func TestAForwardFindsItsSenderInTheRecentListing(t *testing.T) {
	lead := message.Session{Address: "uds:/tmp/cc-socks/30.sock", Protocol: message.ProtocolClaude, Name: "lead", SessionID: "c-lead"}
	late := message.Session{Address: "uds:/tmp/cc-socks/31.sock", Protocol: message.ProtocolClaude, Name: "late", SessionID: "c-late"}
	cl := claudeLeg(lead)
	qw := qwenLeg(alpha)
	r := New(Config{Bridge: true, BridgeInterval: time.Hour, RosterTTL: time.Hour}, host(cl), host(qw))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-cl.Started()
	// The bridge's first sync lists every leg: the recent listing, once
	// the router holds it (the leg is asked before that).
	if !testutil.Within(testutil.Patience, func() bool { _, ok := r.cachedRoster(); return ok }) {
		t.Fatal("the bridge never listed the sessions")
	}
	forward := func(from message.Session, id string) message.Message {
		t.Helper()
		cl.Emit(t, message.Event{Type: message.EventMessage, Leg: message.ProtocolClaude, Message: &message.Message{
			ID: id, From: from.Address, FromName: from.Name, Body: id, Mode: message.ModePrompting,
			Protocol: message.ProtocolClaude, AliasOf: alpha.Address, ToName: "alpha"}})
		var got message.Message
		if !testutil.Within(testutil.Patience, func() bool {
			for _, m := range qw.SentAs() {
				if m.Body == id {
					got = m
					return true
				}
			}
			return false
		}) {
			t.Fatalf("%s was not forwarded", id)
		}
		return got
	}
	listed := cl.Lists()
	if m := forward(lead, "m1"); m.FromName != "lead" || cl.Lists() != listed {
		t.Fatalf("forwarded from %q with the leg listed %d times; want lead, from the recent listing", m.FromName, cl.Lists()-listed)
	}
	cl.AddSession(late)
	if m := forward(late, "m2"); m.FromName != "late" || cl.Lists() != listed+1 {
		t.Fatalf("forwarded from %q with the leg listed %d times; want late, from the leg's listing", m.FromName, cl.Lists()-listed)
	}
}
