package router

import (
	"context"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// The loss: the router stopped reading its legs' queue when its context
// ended, so what a leg accepted while stopping went nowhere, unseen.
func TestWhatALegHandsOnWhileItStopsIsStillHandled(t *testing.T) {
	// The leg hands on one message as it stops (an alias worker's last
	// accepted one, say), and returns once released.
	leg, release := newFake(), make(chan struct{})
	leg.OnRun = func(ctx context.Context, in chan<- message.Event) error {
		<-ctx.Done()
		in <- message.Event{Type: message.EventMessage, Leg: leg.Name(), Message: &message.Message{ID: "m-late", Body: "accepted as we stopped"}}
		<-release
		return ctx.Err()
	}
	r := New(Config{}, leg)
	_, _, sub := r.Hub().Subscribe(-1)
	defer sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	cancel()
	deadline := time.After(testutil.Patience)
	for seen := false; !seen; {
		select {
		case ev := <-sub.C:
			seen = ev.Type == message.EventMessage && ev.Message.ID == "m-late"
		case <-deadline:
			close(release)
			<-done
			t.Fatal("the message a leg handed on while stopping was never handled")
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
