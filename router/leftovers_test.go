package router

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
)

// shutdownDrops is the ids of the shutdown drops the hub kept, in order,
// and the drops metric's shutdown count over every leg.
func shutdownDrops(t *testing.T, r *Router, m *observability.Metrics) (ids []string, counted float64) {
	t.Helper()
	kept, _, sub := r.Hub().Subscribe(0)
	sub.Close()
	for _, ev := range kept {
		if ev.Type == message.EventDrop && ev.Drop.Reason == message.DropShutdown {
			ids = append(ids, ev.Drop.MsgID)
		}
	}
	if f, ok := scrape(t, m)["gateway_drops_total"]; ok {
		for _, s := range f.GetMetric() { // one a leg
			for _, l := range s.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == "shutdown" {
					counted += s.GetCounter().GetValue()
				}
			}
		}
	}
	return ids, counted
}

func TestEveryMessageAndReceiptLeftQueuedWhenTheLegsStopIsCountedOnceAsAShutdownDrop(t *testing.T) {
	msg := func(id string) message.Event {
		return message.Event{Type: message.EventMessage, Leg: message.ProtocolClaude, Message: &message.Message{ID: id, From: "uds:/x.sock"}}
	}
	rc := func(id string) message.Event {
		return message.Event{Type: message.EventReceipt, Leg: message.ProtocolQwen, Receipt: &message.Receipt{MsgID: id, Status: message.StatusDelivered}}
	}
	link := message.Event{Type: message.EventLink, Leg: message.ProtocolRemote}
	tests := []struct {
		name string
		left []message.Event
		want string // the dropped ids, in queue order
	}{
		{"nothing left counts nothing", nil, ""},
		{"one message left is one drop", []message.Event{msg("m1")}, "m1"},
		{"messages and receipts are counted, other events not", []message.Event{link, msg("m1"), rc("r1"), link, msg("m2"), rc("r2"), msg("m3")}, "m1 r1 m2 r2 m3"},
		{"a full queue is counted to its last event", func() (evs []message.Event) {
			for i := range 64 {
				evs = append(evs, msg(fmt.Sprint("m", i)))
			}
			return evs
		}(), func() string {
			var ids []string
			for i := range 64 {
				ids = append(ids, fmt.Sprint("m", i))
			}
			return strings.Join(ids, " ")
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := observability.NewMetrics()
			if err != nil {
				t.Fatal(err)
			}
			r := New(Config{Metrics: m}, newFake())
			in := make(chan message.Event, len(tt.left))
			for _, ev := range tt.left {
				in <- ev
			}
			r.dropLeft(context.Background(), in)
			if len(in) != 0 {
				t.Fatalf("%d events still queued", len(in))
			}
			ids, counted := shutdownDrops(t, r, m)
			if got := strings.Join(ids, " "); got != tt.want {
				t.Errorf("shutdown drops %q, want %q", got, tt.want)
			}
			if int(counted) != len(ids) {
				t.Errorf("metric counts %v shutdown drops, the hub has %d", counted, len(ids))
			}
		})
	}
}

// holdingClock blocks the first Now after hold until release: the router's
// event pump calls it for a prompt without a creation time.
type holdingClock struct {
	clock.Real
	mu      sync.Mutex
	held    chan struct{} // closed when a call is held
	release chan struct{}
}

func (c *holdingClock) hold() (held, release chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held, c.release = make(chan struct{}), make(chan struct{})
	return c.held, c.release
}

func (c *holdingClock) Now() time.Time {
	c.mu.Lock()
	held, release := c.held, c.release
	c.held = nil
	c.mu.Unlock()
	if held != nil {
		close(held)
		<-release
	}
	return time.Now()
}

func TestMessagesALegLeavesAsItStopsAreEachHandledOrCountedAsAShutdownDropExactlyOnce(t *testing.T) {
	const left = 200
	m, err := observability.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	clk := &holdingClock{}
	// The leg, as it stops, hands on a prompt that holds the pump, then
	// left messages, and returns.
	leg, returned := newFake(), make(chan struct{})
	var held, release chan struct{} // the clock's, once the leg stops
	leg.OnRun = func(ctx context.Context, in chan<- message.Event) error {
		defer close(returned)
		<-ctx.Done()
		held, release = clk.hold()
		now := time.Now()
		in <- message.Event{Type: message.EventPermission, Leg: leg.Name(), Time: now, Permission: &message.PermissionRequest{
			SessionID: "s-a", RequestID: "r-1", ToolName: "Bash", State: message.PermissionPending}}
		for i := range left {
			in <- message.Event{Type: message.EventMessage, Leg: leg.Name(), Time: now, Message: &message.Message{ID: fmt.Sprint("left-", i)}}
		}
		return ctx.Err()
	}
	r := New(Config{Metrics: m, Clock: clk, EventQueue: 2 * left, KeepEvents: 4 * left}, leg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	cancel()
	<-returned
	<-held
	// The pump holds the prompt while the leg's Run has returned: what the
	// leg left is queued as the router learns its legs stopped.
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	kept, _, sub := r.Hub().Subscribe(0)
	sub.Close()
	seen := map[string]int{}
	for _, ev := range kept {
		switch {
		case ev.Type == message.EventMessage:
			seen[ev.Message.ID]++
		case ev.Type == message.EventDrop && ev.Drop.Reason == message.DropShutdown:
			seen[ev.Drop.MsgID]++
		}
	}
	for i := range left {
		if id := fmt.Sprint("left-", i); seen[id] != 1 {
			t.Errorf("%s handled or dropped %d times, want once", id, seen[id])
		}
	}
	ids, counted := shutdownDrops(t, r, m)
	if int(counted) != len(ids) {
		t.Errorf("metric counts %v shutdown drops, the hub has %d", counted, len(ids))
	}
	t.Logf("%d of %d left messages handled, %d counted as shutdown drops", left-len(ids), left, len(ids))
}
