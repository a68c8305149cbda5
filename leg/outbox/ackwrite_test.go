package outbox_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/message"
)

func TestAnAcknowledgementWhoseWriteFailedIsWrittenAgain(t *testing.T) {
	h := newHarness(t, stateDir(t), newInner(sent), outbox.Options{}, outbox.Config{})
	h.send(msg("m1", "bridge:s1", "hello"))
	var failing atomic.Bool
	failing.Store(true)
	outbox.FailWrites(h.store, func() error {
		if failing.Load() {
			return errors.New("input/output error")
		}
		return nil
	})
	h.start()
	if rc := h.receipt(); rc.Status != message.StatusSent {
		t.Fatalf("receipt %+v, want sent", rc)
	}
	if e := entry(t, h.store, "m1"); e.State != message.OutboxPending {
		t.Fatalf("with writes failing the entry is %v", e.State)
	}
	failing.Store(false)
	deadline := time.Now().Add(wait)
	for entry(t, h.store, "m1").State != message.OutboxAcked {
		if time.Now().After(deadline) {
			t.Fatal("the acknowledgement was never written once writes worked again: the entry stays pending")
		}
		h.clock.Advance(h.cfg.MaxInterval)
		time.Sleep(time.Millisecond)
	}
	if n := h.inner.count("m1"); n != 1 {
		t.Fatalf("the message was sent %d times, want once", n)
	}
	if pending, _ := h.store.Len(); pending != 0 {
		t.Fatalf("%d pending after the acknowledgement was written", pending)
	}
}

func TestAnAcknowledgementStillUnwrittenAtShutdownIsWrittenThen(t *testing.T) {
	h := newHarness(t, stateDir(t), newInner(sent), outbox.Options{}, outbox.Config{MaxInterval: time.Hour, InitialInterval: time.Hour})
	h.send(msg("m1", "bridge:s1", "hello"))
	var failing atomic.Bool
	failing.Store(true)
	outbox.FailWrites(h.store, func() error {
		if failing.Load() {
			return errors.New("no space left on device")
		}
		return nil
	})
	h.start()
	h.receipt()
	failing.Store(false)
	h.stop() // long before the hour's retry
	if e := entry(t, h.store, "m1"); e.State != message.OutboxAcked {
		t.Fatalf("after shutdown the entry is %v, want acked", e.State)
	}
}

func TestSendingAStoredMessageAgainSendsNothing(t *testing.T) {
	h := newHarness(t, stateDir(t), newInner(sent), outbox.Options{}, outbox.Config{})
	h.send(msg("m1", "bridge:s1", "hello"))
	t.Run("while pending it is queued once", func(t *testing.T) {
		rc, err := h.leg.Send(context.Background(), msg("m1", "bridge:s1", "hello"))
		if err != nil || rc.Status != message.StatusQueued {
			t.Fatalf("Send again = %+v, %v; want queued", rc, err)
		}
		if pending, _ := h.store.Len(); pending != 1 {
			t.Fatalf("%d pending, want 1", pending)
		}
	})
	h.start()
	h.receipt()
	t.Run("once acknowledged it answers its receipt", func(t *testing.T) {
		rc, err := h.leg.Send(context.Background(), msg("m1", "bridge:s1", "hello"))
		if err != nil || rc.Status != message.StatusSent || rc.MsgID != "m1" {
			t.Fatalf("Send again = %+v, %v; want the stored sent receipt", rc, err)
		}
		h.quiet("after sending an acknowledged message again")
		if n := h.inner.count("m1"); n != 1 {
			t.Fatalf("sent %d times", n)
		}
	})
}

func TestAStoreThatCannotWriteIsNotAccepted(t *testing.T) {
	h := newHarness(t, stateDir(t), newInner(sent), outbox.Options{}, outbox.Config{})
	outbox.FailWrites(h.store, func() error { return errors.New("no space left on device") })
	_, err := h.leg.Send(context.Background(), msg("m1", "bridge:s1", "hello"))
	if !errors.Is(err, message.ErrNotAccepted) {
		t.Fatalf("Send error %v, want one wrapping router.ErrNotAccepted", err)
	}
}
