package router

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

// blocking makes f's SendAs wait until gate is closed.
func blocking(f *legtest.Fake) (_ *legtest.Fake, gate chan struct{}) {
	gate = make(chan struct{})
	f.OnSendAs = func(_ context.Context, _ message.Session, m message.Message) (message.Receipt, error) {
		<-gate
		return message.Receipt{MsgID: m.ID, Status: message.StatusSent}, nil
	}
	return f, gate
}

// A busy bridge answers with a queue-full drop.
func TestABusyBridgeAnswersQueueFull(t *testing.T) {
	sender := message.Session{Address: "uds:/tmp/cc-socks/30.sock", Protocol: message.ProtocolClaude, Name: "lead", SessionID: "c-lead"}
	cl := claudeLeg(sender)
	qw, gate := blocking(qwenLeg(alpha))
	r := New(Config{Bridge: true, BridgeInterval: time.Hour}, host(cl), host(qw))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { close(gate); cancel(); <-done }()
	for i := range MaxBackground + 1 {
		cl.Emit(t, message.Event{Type: message.EventMessage, Leg: message.ProtocolClaude, Message: &message.Message{
			ID: fmt.Sprint("m", i), From: sender.Address, FromName: "lead", Body: fmt.Sprint("hi", i), Mode: message.ModePrompting,
			Protocol: message.ProtocolClaude, AliasOf: alpha.Address, ToName: "alpha"}})
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(cl.Relayed()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	rel := cl.Relayed()
	if len(rel) != 1 || rel[0].Status != message.StatusDropped || rel[0].DropReason != message.DropQueueFull {
		t.Fatalf("relays %+v; want one dropped queue-full", rel)
	}
}

// forgetting is a router that remembers two outbound messages, on a fake
// clock, with a federation leg (src) whose forwards go to a Claude session
// whose receivers say nothing of a clean delivery (cl, as Claude Code's:
// the router infers it after a window).
func forgetting() (*clock.FakeClock, *legtest.Fake, *legtest.Fake, *Router) {
	clk := clock.NewFakeClock(time.Unix(1000, 0))
	src := fake(message.ProtocolFederation)
	cl := claudeLeg(claudeWork)
	cl.SettleAfter = time.Second
	return clk, src, cl, New(Config{Bridge: true, BridgeInterval: time.Hour, KeepOutbound: 2, Clock: clk},
		host(src), cl.With(legtest.HostsAliases|legtest.Settles))
}

// forwardN forwards m0..m(n-1) (bodies hi0..) from src to the Claude
// session "work" and returns what each Forward answered.
func forwardN(r *Router, src leg.Leg, n int) []message.Receipt {
	out := make([]message.Receipt, n)
	for i := range n {
		out[i] = r.Forward(context.Background(), src, message.Message{ID: fmt.Sprint("m", i), From: "lead@far", FromName: "lead",
			Body: fmt.Sprint("hi", i), Mode: message.ModePrompting, Protocol: message.ProtocolFederation, AliasOf: claudeWork.Address, ToName: "work"})
	}
	return out
}

// A forwarded message the router forgets (past KeepOutbound) before its
// settle window ends still has its inferred delivery relayed to the leg
// it came from, which waits for that outcome.
func TestAForwardForgottenWithinItsSettleWindowStillRelaysItsOutcome(t *testing.T) {
	clk, src, _, r := forgetting()
	const n = 5
	for i, rc := range forwardN(r, host(src), n) {
		if rc.Status != message.StatusSent {
			t.Fatalf("forward %d: %+v", i, rc)
		}
	}
	clk.Advance(2 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for len(src.Relayed()) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	delivered := 0
	for _, rc := range src.Relayed() {
		if rc.Status == message.StatusDelivered {
			delivered++
		}
	}
	if delivered != n {
		t.Fatalf("%d of %d forwards relayed delivered; want all (relays %+v)", delivered, n, src.Relayed())
	}
}

// A hold that comes for a forward already forgotten (past KeepOutbound)
// within its settle window is the outcome relayed, not the delivery the
// window would otherwise infer.
func TestAHoldForAForgottenForwardIsRelayedInsteadOfAnInferredDelivery(t *testing.T) {
	clk, src, cl, r := forgetting()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	const n = 5
	for i, rc := range forwardN(r, host(src), n) {
		if rc.Status != message.StatusSent {
			t.Fatalf("forward %d: %+v", i, rc)
		}
	}
	var ids [n]string // the ids the bridge sent them under
	for _, m := range cl.SentAs() {
		for i := range n {
			if m.Body == fmt.Sprint("hi", i) {
				ids[i] = m.ID
			}
		}
	}
	cl.Emit(t, message.Event{Type: message.EventReceipt, Leg: message.ProtocolClaude,
		Receipt: &message.Receipt{MsgID: ids[0], Status: message.StatusHeld}})
	deadline := time.Now().Add(5 * time.Second)
	for len(src.Relayed()) < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	clk.Advance(2 * time.Second)
	for len(src.Relayed()) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a second outcome for m0 would show now
	got := map[string][]message.Status{}
	for _, rc := range src.Relayed() {
		got[rc.MsgID] = append(got[rc.MsgID], rc.Status)
	}
	for i := range n {
		id, want := ids[i], message.StatusDelivered
		if i == 0 {
			want = message.StatusHeld
		}
		if len(got[id]) != 1 || got[id][0] != want {
			t.Errorf("forward %d relayed %v; want only %v", i, got[id], want)
		}
	}
}

// Forwards forgotten within their settle window relay nothing once Run has
// returned: their timers stop with it (a relay then would run on a leg
// already stopped, outside the router's goroutines).
func TestForgottenForwardsRelayNothingAfterRunReturns(t *testing.T) {
	clk, src, _, r := forgetting()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	forwardN(r, host(src), 5)
	cancel()
	<-done
	clk.Advance(2 * time.Second)
	time.Sleep(100 * time.Millisecond)
	if rel := src.Relayed(); len(rel) != 0 {
		t.Fatalf("%d relays after Run returned: %+v", len(rel), rel)
	}
}
