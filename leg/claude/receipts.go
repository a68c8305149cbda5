package claude

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
)

// Drop receipts are coalesced as the real CLI does, so a flooding sender
// cannot make us open a connection back per dropped message: the first drop
// per (sender, reason) is reported at once, at most once a minute; later ones
// are batched into one receipt about 5 s later, whose dropped_msg_ids lists
// them (at most 256); and no more than 40 drop receipts go out a minute.
const (
	dropImmediateEvery = time.Minute
	dropBatchDelay     = 5 * time.Second
	dropBatchMax       = 256
	dropBudget         = 40
	dropBudgetWindow   = time.Minute
	dropKeysMax        = 1024
)

type dropKey struct {
	sender string
	reason message.DropReason
}

type dropState struct {
	lastImmediate time.Time
	reply         replyTo
	pending       []string
	timer         clock.Stopper
}

// dropReporter decides when a drop receipt goes out.
type dropReporter struct {
	clock clock.Clock
	from  string
	send  func(ctx context.Context, reply replyTo, f Frame)

	mu     sync.Mutex
	state  map[dropKey]*dropState
	sent   []time.Time // receipt times inside the budget window
	closed bool
}

func newDropReporter(clk clock.Clock, from string, send func(ctx context.Context, reply replyTo, f Frame)) *dropReporter {
	return &dropReporter{clock: clk, from: from, send: send, state: map[dropKey]*dropState{}}
}

// spend reports whether the global budget allows one more receipt now.
func (d *dropReporter) spend(now time.Time) bool {
	keep := d.sent[:0]
	for _, t := range d.sent {
		if now.Sub(t) < dropBudgetWindow {
			keep = append(keep, t)
		}
	}
	d.sent = keep
	if len(d.sent) >= dropBudget {
		return false
	}
	d.sent = append(d.sent, now)
	return true
}

// report records one dropped message from sender, answerable at reply.
func (d *dropReporter) report(ctx context.Context, sender string, reply replyTo, msgID string, reason message.DropReason) {
	if reply.path == "" {
		return // unvettable senders get no receipts at all
	}
	now := d.clock.Now()
	k := dropKey{sender, reason}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	st := d.state[k]
	if st == nil {
		if len(d.state) >= dropKeysMax {
			d.evictLocked()
		}
		st = &dropState{}
		d.state[k] = st
	}
	st.reply = reply
	if st.lastImmediate.IsZero() || now.Sub(st.lastImmediate) >= dropImmediateEvery {
		st.lastImmediate = now
		ok := d.spend(now)
		d.mu.Unlock()
		if ok {
			d.send(ctx, reply, NewDropReceipt(d.from, msgID, reason))
		}
		return
	}
	if len(st.pending) < dropBatchMax {
		st.pending = append(st.pending, msgID)
	}
	if st.timer == nil {
		st.timer = d.clock.AfterFunc(dropBatchDelay, func() { d.flush(k) })
	}
	d.mu.Unlock()
}

func (d *dropReporter) flush(k dropKey) {
	d.mu.Lock()
	st := d.state[k]
	if st == nil || d.closed || len(st.pending) == 0 {
		d.mu.Unlock()
		return
	}
	ids, reply := st.pending, st.reply
	st.pending, st.timer = nil, nil
	ok := d.spend(d.clock.Now())
	d.mu.Unlock()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), receiptTimeout)
	defer cancel()
	d.send(ctx, reply, NewDropReceipt(d.from, ids[len(ids)-1], k.reason, ids...))
}

// evictLocked forgets the key reported longest ago with nothing pending.
func (d *dropReporter) evictLocked() {
	var oldest dropKey
	var at time.Time
	found := false
	for k, st := range d.state {
		if st.timer != nil {
			continue
		}
		if !found || st.lastImmediate.Before(at) {
			oldest, at, found = k, st.lastImmediate, true
		}
	}
	if found {
		delete(d.state, oldest)
	}
}

// close stops pending batches; nothing is sent after it.
func (d *dropReporter) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for _, st := range d.state {
		if st.timer != nil {
			st.timer.Stop()
		}
	}
}

// receiptTimeout bounds one receipt connection.
const receiptTimeout = 5 * time.Second

// receipt sends one control line to a verified reply socket on a new
// connection. Like the real CLI, it starts with an auth line carrying the
// sender's own peerToken when the sender's key file is in our registry, and
// has none otherwise. Unvettable senders get nothing, and neither does a
// socket that another process holds by now.
func (p *Leg) receipt(ctx context.Context, reply replyTo, f Frame) {
	if reply.path == "" {
		return
	}
	if !p.stillOwned(reply) {
		p.log.Info("receipt not sent: the reply socket no longer belongs to the sender's process",
			"to", reply.path, "pid", reply.pid, "action", f.Action, "status", f.Status)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, receiptTimeout)
	defer cancel()
	if err := p.write(ctx, reply.path, 0, f); err != nil {
		if errors.Is(err, ErrStaleKey) {
			p.log.Info("receipt not sent: the reply socket's key belongs to another process", "to", reply.path)
			return
		}
		p.log.Info("receipt not delivered", "to", reply.path, "status", f.Status, "action", f.Action, "err", err)
		return
	}
	if st, ok := StatusOf(f.Status, f.StatusDetail); ok && f.Action == ActionPeerMessageStatus && p.cfg.ReceiptSent != nil {
		p.cfg.ReceiptSent(st)
	}
}
