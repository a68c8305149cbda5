package uds

import (
	"context"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
)

func TestEmitter(t *testing.T) {
	now := time.Unix(1000, 0)
	newBox := func() (*Emitter, chan message.Event) {
		o := NewEmitter(message.ProtocolQwen, func() time.Time { return now })
		ch := make(chan message.Event, 1)
		return o, ch
	}
	t.Run("an event is stamped with the leg and the time", func(t *testing.T) {
		o, ch := newBox()
		o.Attach(ch)
		if !o.Emit(context.Background(), message.Event{Type: message.EventMessage}) {
			t.Fatal("not emitted")
		}
		ev := <-ch
		if ev.Leg != message.ProtocolQwen || !ev.Time.Equal(now) {
			t.Fatalf("event = %+v", ev)
		}
	})
	t.Run("an offer is stamped and handed on while there is room", func(t *testing.T) {
		o, ch := newBox()
		o.Attach(ch)
		if !o.Offer(message.Event{Type: message.EventDrop}) {
			t.Fatal("not offered")
		}
		if ev := <-ch; ev.Leg != message.ProtocolQwen || !ev.Time.Equal(now) {
			t.Fatalf("event = %+v", ev)
		}
	})
	t.Run("an offer to a full queue is lost at once, not waited for", func(t *testing.T) {
		o, ch := newBox()
		o.Attach(ch)
		o.Offer(message.Event{})
		if o.Offer(message.Event{}) {
			t.Fatal("offered past a full queue")
		}
	})
	t.Run("nothing is offered before Attach or after Close", func(t *testing.T) {
		o, ch := newBox()
		if o.Offer(message.Event{}) {
			t.Fatal("offered while detached")
		}
		o.Attach(ch)
		o.Close()
		if o.Offer(message.Event{}) {
			t.Fatal("offered after Close")
		}
	})
	t.Run("nothing is emitted before Attach", func(t *testing.T) {
		o, _ := newBox()
		if o.Emit(context.Background(), message.Event{}) || o.Attached() {
			t.Fatal("emitted while detached")
		}
	})
	t.Run("a full queue waits until the context ends", func(t *testing.T) {
		o, ch := newBox()
		o.Attach(ch)
		o.Emit(context.Background(), message.Event{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if o.Emit(ctx, message.Event{}) {
			t.Fatal("emitted into a full queue")
		}
		if o.Pending() != 1 {
			t.Fatalf("pending = %d", o.Pending())
		}
	})
	t.Run("a full queue waits until the emitter is closed", func(t *testing.T) {
		o, ch := newBox()
		o.Attach(ch)
		o.Emit(context.Background(), message.Event{})
		done := make(chan bool)
		go func() { done <- o.Emit(context.Background(), message.Event{}) }()
		o.Close()
		if <-done {
			t.Fatal("emitted after close")
		}
	})
}
