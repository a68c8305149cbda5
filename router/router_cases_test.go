package router

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
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
