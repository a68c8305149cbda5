package main

import (
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// qwenPeer is a fake Qwen Code session in the test process (testkit/fakeqwen)
// sharing the gateway's Qwen home, so each lists the other.
type qwenPeer struct {
	*qwen.Leg
	events <-chan message.Event
}

func newQwenPeer(t *testing.T, g *gatewaytest.Gateway, name string, mode message.Mode) *qwenPeer {
	t.Helper()
	f := fakeqwen.Start(t, fakeqwen.Config{Name: name, Home: g.QwenHome, RuntimeDir: g.Runtime, Mode: mode})
	return &qwenPeer{Leg: f.Leg, events: f.Events()}
}

func (q *qwenPeer) wait(t *testing.T, pred func(message.Event) bool) message.Event {
	t.Helper()
	return waitEvent(t, q.events, pred)
}

func TestQwenSessionsAreListedBesideClaudeOnes(t *testing.T) {
	g := startBinary(t, t.TempDir())
	newFake(t, g, "work-08", message.ModePrompting)
	q := newQwenPeer(t, g, "qwen-work", message.ModePrompting)
	ss, err := g.Sessions(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	got := map[message.Protocol]string{}
	for _, s := range ss {
		got[s.Protocol] = s.Name
		if s.Protocol == message.ProtocolQwen && (s.SessionID != q.SessionID() || s.Address != "uds:"+q.SocketPath() || s.Kind != "external") {
			t.Errorf("qwen session = %+v", s)
		}
	}
	if got[message.ProtocolClaude] != "work-08" || got[message.ProtocolQwen] != "qwen-work" || len(ss) != 2 {
		t.Fatalf("sessions = %+v, want one claude and one qwen (the gateway's own records left out)", ss)
	}
}

func TestAQwenSendGetsTheRealDeliveredReceipt(t *testing.T) {
	g := startBinary(t, t.TempDir())
	q := newQwenPeer(t, g, "qwen-work", message.ModePrompting)
	out, err := g.Send(ctxT(t), api.SendBody{To: "qwen-work", Text: "hello qwen", Wait: true, Timeout: "5s"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != message.StatusDelivered || out.Receipts[len(out.Receipts)-1].Detail == "inferred" {
		t.Fatalf("outbound = %+v, want delivered by a receipt", out)
	}
	ev := q.wait(t, func(ev message.Event) bool { return ev.Type == message.EventMessage })
	if ev.Message.Body != "hello qwen" || ev.Message.FromName != "gateway" || ev.Message.Auth != message.AuthPeer || ev.Message.Mode != message.ModePrompting {
		t.Fatalf("qwen peer got %+v", ev.Message)
	}
}

func TestABypassSendToQwenIsHeldThenDenied(t *testing.T) {
	g := startBinary(t, t.TempDir())
	q := newQwenPeer(t, g, "qwen-work", message.ModePrompting)
	out, err := g.Send(ctxT(t), api.SendBody{To: "qwen-work", Text: "bypass hello", Mode: "bypass", Wait: true, Timeout: "1s"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != message.StatusHeld {
		t.Fatalf("status = %v, want held", out.Status)
	}
	if err := q.Decide(ctxT(t), out.Message.ID, false, ""); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := g.Message(ctxT(t), out.Message.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == message.StatusDenied {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("status = %v, want denied", got.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAQwenSessionSendsToTheGatewayByItsRecord(t *testing.T) {
	g := startBinary(t, t.TempDir())
	q := newQwenPeer(t, g, "qwen-work", message.ModePrompting)
	events := collect(t, g)
	var gw message.Session
	ss, err := q.Sessions(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.Name == "gateway" {
			gw = s
		}
	}
	if gw.Address == "" {
		t.Fatalf("the gateway's qwen record is not listed: %+v", ss)
	}
	rc, err := q.Send(ctxT(t), message.Message{ID: "m-1", To: gw.Address, ToSessionID: gw.SessionID, Body: "to the gateway", Mode: message.ModePrompting})
	if err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send: %+v %v", rc, err)
	}
	ev := waitEvent(t, events, func(ev message.Event) bool { return ev.Type == message.EventMessage })
	if ev.Leg != message.ProtocolQwen || ev.Message.Body != "to the gateway" || ev.Message.FromName != "qwen-work" {
		t.Fatalf("event = %+v", ev)
	}
	rev := q.wait(t, func(ev message.Event) bool { return ev.Type == message.EventReceipt })
	if rev.Receipt.MsgID != "m-1" || rev.Receipt.Status != message.StatusDelivered {
		t.Fatalf("the qwen sender heard %+v, want delivered", rev.Receipt)
	}
}
