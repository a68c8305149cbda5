package mcp

import (
	"context"
	"errors"
	"sync"

	"github.com/sessiongateway/gateway/message"
)

// InboxSize is how many unread messages one client's inbox keeps. When it
// is full a new message is refused (the newest is dropped, never an unread
// one) and its sender gets a dropped receipt with reason queue-full.
const InboxSize = 256

var (
	errInboxFull   = errors.New("inbox full")
	errInboxClosed = errors.New("inbox closed")
)

// inbox is one client's unread messages, each with a sequence number: a
// read after cursor N forgets every message up to N, so nothing is read
// twice and a client that lost an answer can read again from its cursor.
type inbox struct {
	mu      sync.Mutex
	max     int
	next    uint64 // the sequence number of the next message put
	msgs    []queued
	read    uint64 // the highest sequence number handed out
	closed  bool
	changed chan struct{}
}

type queued struct {
	seq uint64
	msg message.Message
}

func newInbox(max int) *inbox {
	return &inbox{max: max, next: 1, changed: make(chan struct{})}
}

func (b *inbox) put(m message.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errInboxClosed
	}
	if len(b.msgs) >= b.max {
		return errInboxFull
	}
	b.msgs = append(b.msgs, queued{seq: b.next, msg: m})
	b.next++
	close(b.changed)
	b.changed = make(chan struct{})
	return nil
}

// take forgets every message up to cursor (the server's own read mark when
// cursor is 0 or past it) and returns up to max of those after it, waiting until
// there is one or ctx ends. It returns the cursor to pass next time and
// the messages read for the first time (for their delivered receipts).
func (b *inbox) take(ctx context.Context, cursor uint64, limit int) (got []queued, next uint64, fresh []message.Message, err error) {
	for {
		b.mu.Lock()
		if cursor == 0 || cursor > b.read {
			// Past the read mark is a cursor of an earlier connection's
			// inbox (numbered from 1 again): read on from the mark, so
			// no unread message is forgotten unseen.
			cursor = b.read
		}
		i := 0
		for i < len(b.msgs) && b.msgs[i].seq <= cursor {
			i++
		}
		b.msgs = b.msgs[i:]
		if b.closed {
			b.mu.Unlock()
			return nil, cursor, nil, errInboxClosed
		}
		if len(b.msgs) > 0 {
			got = append(got, b.msgs[:min(limit, len(b.msgs))]...)
			next = got[len(got)-1].seq
			for _, q := range got {
				if q.seq > b.read {
					fresh = append(fresh, q.msg)
				}
			}
			b.read = max(b.read, next)
			b.mu.Unlock()
			return got, next, fresh, nil
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, cursor, nil, nil
		}
	}
}

// unread counts the messages not yet handed out.
func (b *inbox) unread() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, q := range b.msgs {
		if q.seq > b.read {
			n++
		}
	}
	return n
}

// close refuses every later put and returns the messages never read.
func (b *inbox) close() []message.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	var unread []message.Message
	for _, q := range b.msgs {
		if q.seq > b.read {
			unread = append(unread, q.msg)
		}
	}
	b.msgs = nil
	close(b.changed)
	return unread
}
