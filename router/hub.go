package router

import (
	"errors"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/message"
)

// ErrSlowWatcher ends a subscription whose reader fell behind.
var ErrSlowWatcher = errors.New("watcher too slow: events were dropped, reconnect with Last-Event-ID to resume")

// Hub numbers events, keeps the most recent ones for replay, and fans them
// out. A subscriber that cannot keep up is cut off, never waited on.
type Hub struct {
	mu      sync.Mutex
	nextID  uint64
	ring    []message.Event // last len(ring) events, oldest first once full
	start   int
	n       int
	subs    map[*Sub]struct{}
	bufSize int
	now     func() time.Time
	closed  error // set by CloseAll: later subscriptions end at once
}

// NewHub keeps the last keep events and gives each subscriber a queue of buf.
func NewHub(keep, buf int) *Hub {
	return &Hub{ring: make([]message.Event, keep), subs: map[*Sub]struct{}{}, bufSize: buf, now: time.Now}
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
		i := (h.start + h.n) % len(h.ring)
		h.ring[i] = ev
		if h.n < len(h.ring) {
			h.n++
		} else {
			h.start = (h.start + 1) % len(h.ring)
		}
	}
	for s := range h.subs {
		select {
		case s.c <- ev:
		default:
			s.closeLocked(ErrSlowWatcher)
		}
	}
	return ev
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
