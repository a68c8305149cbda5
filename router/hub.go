package router

import (
	"errors"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/message"
)

// ErrSlowWatcher ends a subscription whose reader fell behind.
var ErrSlowWatcher = errors.New("watcher too slow: events were dropped, reconnect with Last-Event-ID to resume")

// KeepEventBytes bounds what the hub keeps for replay by the events'
// weight, beside their count: one event may carry a message of 1 MiB or
// a prompt of 8 MiB, so a count alone would let a peer make the replay
// hold gigabytes. The newest event is always kept.
const KeepEventBytes = 32 << 20

// Hub numbers events, keeps the most recent ones for replay, and fans them
// out. A subscriber that cannot keep up is cut off, never waited on.
type Hub struct {
	mu      sync.Mutex
	nextID  uint64
	ring    []message.Event // last len(ring) events, oldest first once full
	weights []int           // each kept event's weight, as ring
	bytes   int             // the kept events' weight
	start   int
	n       int
	subs    map[*Sub]struct{}
	bufSize int
	now     func() time.Time
	closed  error // set by CloseAll: later subscriptions end at once
	// permChanged is closed at the next permission event; nil until
	// someone asks for it (PermissionsChanged).
	permChanged chan struct{}
}

// NewHub keeps the last keep events and gives each subscriber a queue of buf.
func NewHub(keep, buf int) *Hub {
	return &Hub{ring: make([]message.Event, keep), weights: make([]int, keep), subs: map[*Sub]struct{}{}, bufSize: buf, now: time.Now}
}

// weight is about what ev holds in memory: its variable-length parts and
// a fixed share for the rest.
func weight(ev message.Event) int {
	n := 256
	msg := func(m *message.Message) {
		n += len(m.Body) + len(m.From) + len(m.FromName) + len(m.To) + len(m.ToName) + 128*len(m.Attachments)
		for _, h := range m.HopChain {
			n += len(h)
		}
	}
	if ev.Message != nil {
		msg(ev.Message)
	}
	if ev.Held != nil {
		msg(&ev.Held.Message)
		n += len(ev.Held.Reason)
	}
	if ev.Remote != nil {
		n += len(ev.Remote.Text) + len(ev.Remote.Raw)
	}
	if ev.Permission != nil {
		n += ev.Permission.Bytes()
	}
	if ev.Receipt != nil {
		n += len(ev.Receipt.Reason)
	}
	return n
}

// Sub is one subscription. C closes when the subscription ends; Err says why.
type Sub struct {
	C    <-chan message.Event
	c    chan message.Event
	hub  *Hub
	err  error
	once sync.Once
}

// Err is nil while C is open, and after Close; ErrSlowWatcher after a cut-off.
func (s *Sub) Err() error {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.err
}

// Close ends the subscription.
func (s *Sub) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.closeLocked(nil)
}

func (s *Sub) closeLocked(err error) {
	s.once.Do(func() {
		s.err = err
		delete(s.hub.subs, s)
		close(s.c)
	})
}

// Publish numbers ev and sends it to every subscriber.
func (h *Hub) Publish(ev message.Event) message.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	ev.ID = h.nextID
	if ev.Time.IsZero() {
		ev.Time = h.now()
	}
	if len(h.ring) > 0 {
		if h.n == len(h.ring) {
			h.forgetOldest()
		}
		i := (h.start + h.n) % len(h.ring)
		h.ring[i], h.weights[i] = ev, weight(ev)
		h.bytes += h.weights[i]
		h.n++
		for h.bytes > KeepEventBytes && h.n > 1 {
			h.forgetOldest()
		}
	}
	for s := range h.subs {
		select {
		case s.c <- ev:
		default:
			s.closeLocked(ErrSlowWatcher)
		}
	}
	if ev.Type == message.EventPermission && h.permChanged != nil {
		close(h.permChanged)
		h.permChanged = nil
	}
	return ev
}

// PermissionsChanged returns a channel closed at the next permission event
// published: a signal for a reader that wants the prompts' latest state,
// not each event, so it has no queue to fall behind on. Take it before
// reading the state, so a change in between is not missed.
func (h *Hub) PermissionsChanged() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.permChanged == nil {
		h.permChanged = make(chan struct{})
	}
	return h.permChanged
}

func (h *Hub) forgetOldest() {
	h.bytes -= h.weights[h.start]
	h.ring[h.start], h.weights[h.start] = message.Event{}, 0 // let it go
	h.start = (h.start + 1) % len(h.ring)
	h.n--
}

// Subscribe returns the kept events after lastID (all kept ones for 0, none
// for a negative lastID) and a subscription for what follows. gap is true
// when events after lastID were already forgotten.
func (h *Hub) Subscribe(lastID int64) (replay []message.Event, gap bool, sub *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if lastID >= 0 {
		for i := 0; i < h.n; i++ {
			ev := h.ring[(h.start+i)%len(h.ring)]
			if ev.ID > uint64(lastID) {
				if len(replay) == 0 && ev.ID > uint64(lastID)+1 && lastID > 0 {
					gap = true
				}
				replay = append(replay, ev)
			}
		}
		if lastID > 0 && uint64(lastID) < h.nextID && len(replay) == 0 {
			gap = true
		}
	}
	c := make(chan message.Event, h.bufSize)
	sub = &Sub{C: c, c: c, hub: h}
	h.subs[sub] = struct{}{}
	if h.closed != nil {
		sub.closeLocked(h.closed)
	}
	return replay, gap, sub
}

// LastID is the id of the newest event.
func (h *Hub) LastID() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nextID
}
