package leg

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
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

// A lost notice is counted and logged with its cause, at most once per
// noticeLogEvery, the line saying how many were lost since the last one.
func TestALostNoticeIsCountedAndLoggedWithItsCause(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(o *Emitter, ch chan message.Event)
		wantCause string
	}{
		{"a full queue: the router is behind", func(o *Emitter, ch chan message.Event) {
			o.Attach(ch)
			ch <- message.Event{}
		}, "behind"},
		{"before Attach: the router is not reading yet", func(*Emitter, chan message.Event) {}, "not reading yet"},
		{"after Close: the leg is stopping", func(o *Emitter, ch chan message.Event) {
			o.Attach(ch)
			o.Close()
		}, "stopping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			o := NewEmitter(message.ProtocolClaude, func() time.Time { return now })
			ch := make(chan message.Event, 1)
			tt.setup(o, ch)
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			lines := func() []string { return strings.Split(strings.TrimSpace(logs.String()), "\n") }

			if o.Notice(log, message.Event{Type: message.EventDrop}) {
				t.Fatal("a notice went through")
			}
			if got := lines(); len(got) != 1 || !strings.Contains(got[0], "cause="+strconv.Quote(tt.wantCause)) && !strings.Contains(got[0], "cause="+tt.wantCause) ||
				!strings.Contains(got[0], "type=drop") || !strings.Contains(got[0], "lost=1 ") {
				t.Fatalf("log after one lost notice: %q", got)
			}
			for range 4 {
				o.Notice(log, message.Event{Type: message.EventDrop})
			}
			if got := lines(); len(got) != 1 {
				t.Fatalf("%d log lines within %v, want 1: %q", len(got), noticeLogEvery, got)
			}
			now = now.Add(noticeLogEvery)
			o.Notice(log, message.Event{Type: message.EventDrop})
			if got := lines(); len(got) != 2 || !strings.Contains(got[1], "lost=5 ") || !strings.Contains(got[1], "lost_total=6") {
				t.Fatalf("log a period later: %q, want a second line saying 5 lost since the first", got)
			}
			if o.Lost() != 6 {
				t.Fatalf("Lost = %d, want 6", o.Lost())
			}
		})
	}
}

// A notice that goes through is neither counted nor logged.
func TestANoticeHandedOnIsNotCounted(t *testing.T) {
	o := NewEmitter(message.ProtocolClaude, time.Now)
	ch := make(chan message.Event, 1)
	o.Attach(ch)
	var logs bytes.Buffer
	if !o.Notice(slog.New(slog.NewTextHandler(&logs, nil)), message.Event{Type: message.EventDrop}) || o.Lost() != 0 || logs.Len() != 0 {
		t.Fatalf("handed on: lost %d, logs %q", o.Lost(), logs.String())
	}
	if ev := <-ch; ev.Type != message.EventDrop || ev.Leg != message.ProtocolClaude {
		t.Fatalf("event = %+v", ev)
	}
}

// blockingHandler holds its first record until release is closed, the way
// a slow log writer holds the emitter's log lock.
type blockingHandler struct {
	entered, release chan struct{}
	first            *sync.Once
	mu               *sync.Mutex
	lost             *[]uint64 // the lost attribute of each line
}

func (h blockingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h blockingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h blockingHandler) WithGroup(string) slog.Handler            { return h }
func (h blockingHandler) Handle(_ context.Context, r slog.Record) error {
	h.first.Do(func() { close(h.entered); <-h.release })
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "lost" {
			h.mu.Lock()
			*h.lost = append(*h.lost, a.Value.Uint64())
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

// Notices lost while another one's line is being written are each counted
// once: every later line says how many are new since the one before, never
// a count already reported (nor, from a loss counted before that line, a
// negative one), and a loss already in a line writes none of its own.
func TestNoticesLostTogetherAreEachReportedOnce(t *testing.T) {
	var ticks atomic.Int64 // every reading of the clock is a period later
	o := NewEmitter(message.ProtocolClaude, func() time.Time {
		return time.Unix(1000, 0).Add(time.Duration(ticks.Add(1)) * noticeLogEvery)
	})
	ch := make(chan message.Event, 1)
	o.Attach(ch)
	ch <- message.Event{}
	var lost []uint64
	h := blockingHandler{entered: make(chan struct{}), release: make(chan struct{}), first: new(sync.Once), mu: new(sync.Mutex), lost: &lost}
	log := slog.New(h)

	var wg sync.WaitGroup
	wg.Go(func() { o.Notice(log, message.Event{Type: message.EventDrop}) })
	<-h.entered // the first line is being written, its lock held
	for range 2 {
		wg.Go(func() { o.Notice(log, message.Event{Type: message.EventDrop}) })
	}
	counted := testutil.Within(testutil.Patience, func() bool { return o.Lost() == 3 })
	close(h.release)
	wg.Wait()
	if !counted {
		t.Fatalf("Lost = %d, want 3", o.Lost())
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if len(lost) != 2 || lost[0] != 1 || lost[1] != 2 {
		t.Fatalf("lines said %v lost, want [1 2] (3 lost in all)", lost)
	}
}

// A held notice the router has no room for waits, in order, and reaches
// the router once it reads: a person must hear of a held message.
func TestHeldNoticesWaitForTheRoutersRoomInOrder(t *testing.T) {
	o := NewEmitter(message.ProtocolClaude, time.Now)
	ch := make(chan message.Event, 1)
	o.Attach(ch)
	ch <- message.Event{Type: message.EventReceipt} // the router is behind
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	held := func(id string) message.Event {
		return message.Event{Type: message.EventHeld, Held: &message.Held{Message: message.Message{ID: id}}}
	}
	for _, id := range []string{"h1", "h2", "h3"} {
		if !o.Notice(log, held(id)) {
			t.Fatalf("held notice %s was not taken", id)
		}
	}
	o.Notice(log, message.Event{Type: message.EventDrop}) // no room: lost
	var got []string
	for range 4 {
		ev := <-ch
		if ev.Type == message.EventHeld {
			if ev.Leg != message.ProtocolClaude {
				t.Fatalf("held notice not stamped: %+v", ev)
			}
			got = append(got, ev.Held.Message.ID)
		}
	}
	if !slices.Equal(got, []string{"h1", "h2", "h3"}) {
		t.Fatalf("held notices arrived as %v, want h1 h2 h3", got)
	}
	// A held notice offered while earlier ones still wait goes behind them,
	// and with room and none waiting one goes straight through.
	if !o.Notice(log, held("h4")) {
		t.Fatal("held notice h4 was not taken")
	}
	if ev := <-ch; ev.Held == nil || ev.Held.Message.ID != "h4" {
		t.Fatalf("next event %+v, want h4", ev)
	}
	o.Close()
	if n := o.Lost(); n != 1 {
		t.Fatalf("Lost = %d, want 1 (the drop notice)", n)
	}
}

// The held notices waiting are bounded, and those still waiting when the
// emitter closes are lost and counted; Close returns with the goroutine
// that hands them on stopped.
func TestHeldNoticesWaitingAreBoundedAndLostAtClose(t *testing.T) {
	o := NewEmitter(message.ProtocolQwen, time.Now)
	ch := make(chan message.Event) // a router that never reads
	o.Attach(ch)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for range MaxHeldBacklog {
		if !o.Notice(log, message.Event{Type: message.EventHeld}) {
			t.Fatal("a held notice within the bound was not taken")
		}
	}
	if o.Notice(log, message.Event{Type: message.EventHeld}) {
		t.Fatalf("a held notice past MaxHeldBacklog %d was taken", MaxHeldBacklog)
	}
	o.Close()
	if want := uint64(MaxHeldBacklog + 1); o.Lost() != want {
		t.Fatalf("Lost = %d, want %d: every one still waiting, and the one past the bound", o.Lost(), want)
	}
	select {
	case ev := <-ch:
		t.Fatalf("an event reached the router after Close: %+v", ev)
	default:
	}
}
