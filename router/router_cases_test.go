package router

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

type blockingHost struct {
	*hostLeg
	gate chan struct{}
}

func (b *blockingHost) SendAs(ctx context.Context, s message.Session, m message.Message) (message.Receipt, error) {
	<-b.gate
	return b.hostLeg.SendAs(ctx, s, m)
}

// A busy bridge answers with a queue-full drop.
func TestABusyBridgeAnswersQueueFull(t *testing.T) {
	sender := message.Session{Address: "uds:/tmp/cc-socks/30.sock", Protocol: message.ProtocolClaude, Name: "lead", SessionID: "c-lead"}
	cl := &hostLeg{fakeLeg: claudeLeg(sender)}
	qw := &blockingHost{hostLeg: &hostLeg{fakeLeg: qwenLeg(alpha)}, gate: make(chan struct{})}
	r := New(Config{Bridge: true, BridgeInterval: time.Hour}, cl, qw)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { close(qw.gate); cancel(); <-done }()
	for i := range MaxBackground + 1 {
		cl.fakeLeg.emit(t, message.Event{Type: message.EventMessage, Leg: message.ProtocolClaude, Message: &message.Message{
			ID: fmt.Sprint("m", i), From: sender.Address, FromName: "lead", Body: fmt.Sprint("hi", i), Mode: message.ModePrompting,
			Protocol: message.ProtocolClaude, AliasOf: alpha.Address, ToName: "alpha"}})
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(cl.relays()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	rel := cl.relays()
	if len(rel) != 1 || rel[0].Status != message.StatusDropped || rel[0].DropReason != message.DropQueueFull {
		t.Fatalf("relays %+v; want one dropped queue-full", rel)
	}
}

// settlingHost is an alias host whose receivers say nothing of a clean
// delivery (as Claude Code's): the router infers it after a window.
type settlingHost struct{ *hostLeg }

func (settlingHost) Settle() time.Duration { return time.Second }

// forgetting is a router that remembers two outbound messages, on a fake
// clock, with a federation leg (src) whose forwards go to a Claude session
// whose receivers say nothing of a clean delivery (cl).
func forgetting() (*clock.FakeClock, *hostLeg, settlingHost, *Router) {
	clk := clock.NewFakeClock(time.Unix(1000, 0))
	src := &hostLeg{fakeLeg: &fakeLeg{name: message.ProtocolFederation, run: make(chan struct{})}}
	cl := settlingHost{&hostLeg{fakeLeg: claudeLeg(claudeWork)}}
	return clk, src, cl, New(Config{Bridge: true, BridgeInterval: time.Hour, KeepOutbound: 2, Clock: clk}, src, cl)
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
	for i, rc := range forwardN(r, src, n) {
		if rc.Status != message.StatusSent {
			t.Fatalf("forward %d: %+v", i, rc)
		}
	}
	clk.Advance(2 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for len(src.relays()) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	delivered := 0
	for _, rc := range src.relays() {
		if rc.Status == message.StatusDelivered {
			delivered++
		}
	}
	if delivered != n {
		t.Fatalf("%d of %d forwards relayed delivered; want all (relays %+v)", delivered, n, src.relays())
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
	for i, rc := range forwardN(r, src, n) {
		if rc.Status != message.StatusSent {
			t.Fatalf("forward %d: %+v", i, rc)
		}
	}
	var ids [n]string // the ids the bridge sent them under
	for _, m := range cl.sends() {
		for i := range n {
			if m.Body == fmt.Sprint("hi", i) {
				ids[i] = m.ID
			}
		}
	}
	cl.emit(t, message.Event{Type: message.EventReceipt, Leg: message.ProtocolClaude,
		Receipt: &message.Receipt{MsgID: ids[0], Status: message.StatusHeld}})
	deadline := time.Now().Add(5 * time.Second)
	for len(src.relays()) < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	clk.Advance(2 * time.Second)
	for len(src.relays()) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a second outcome for m0 would show now
	got := map[string][]message.Status{}
	for _, rc := range src.relays() {
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
	forwardN(r, src, 5)
	cancel()
	<-done
	clk.Advance(2 * time.Second)
	time.Sleep(100 * time.Millisecond)
	if rel := src.relays(); len(rel) != 0 {
		t.Fatalf("%d relays after Run returned: %+v", len(rel), rel)
	}
}
