package federation

import (
	"context"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/inorder"
	"github.com/sessiongateway/gateway/message"
)

// lane is one sender's messages on their way to the local leg, in order.
type lane struct {
	queue   []*flight     // not handed to the leg yet
	writing int           // handed to the leg, not answered yet
	wake    chan struct{} // a message queued or a write answered
}

// poke wakes the lane's writer, if it waits.
func (l *lane) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Config.LaneWindow bounds one sender's messages handed to the local leg
// and not yet answered. A writer that keeps their order says so once each is
// queued (inorder.Queued: an alias worker, which writes to each target in
// the order asked), so the lane hands it the next without waiting for
// the write; a crash of this gateway then leaves at most this many of a
// sender's messages written and not recorded (each is written once more
// when NATS offers it again). Other writers are waited for, one message
// at a time.
// runLane writes one sender's messages in order until none is left and
// none is being written.
func (n *Node) runLane(ctx context.Context, in *inflight, sender string, l *lane, deliver func(context.Context, message.Message) (message.Receipt, error)) {
	var writing sync.WaitGroup
	defer writing.Wait()
	for {
		in.mu.Lock()
		if ctx.Err() != nil || len(l.queue) == 0 && l.writing == 0 {
			delete(in.lanes, sender) // on shutdown, what is left stays unacknowledged: NATS offers it again
			in.mu.Unlock()
			return
		}
		if len(l.queue) == 0 || l.writing >= n.cfg.LaneWindow {
			in.mu.Unlock()
			select {
			case <-l.wake:
			case <-ctx.Done():
			}
			continue
		}
		f := l.queue[0]
		l.queue = l.queue[1:]
		l.writing++
		in.mu.Unlock()
		queued, done := make(chan struct{}), make(chan struct{})
		var once sync.Once
		qctx := inorder.WithQueued(f.ctx, func() { once.Do(func() { close(queued) }) })
		writing.Go(func() {
			defer func() {
				in.mu.Lock()
				l.writing--
				in.mu.Unlock()
				l.poke()
			}()
			defer close(done)
			n.deliverFlight(qctx, in, f, deliver)
		})
		select {
		case <-queued:
		case <-done:
		}
	}
}

// deliverFlight hands f to the local leg, retrying while it takes nothing,
// and records what it says. ctx is f's, told when the leg has queued it.
func (n *Node) deliverFlight(ctx context.Context, in *inflight, f *flight, deliver func(context.Context, message.Message) (message.Receipt, error)) {
	defer f.end()
	waits := clock.Backoff{Initial: 250 * time.Millisecond, Max: 5 * time.Second}.New(n.cfg.Clock)
	var rc message.Receipt
	for {
		dctx, cancel := context.WithTimeout(ctx, n.cfg.AckWait)
		var err error
		rc, err = deliver(dctx, f.m)
		cancel()
		if err == nil || rc.Status != 0 {
			break
		}
		if ctx.Err() != nil {
			return
		}
		n.log.Warn("federation delivery failed; trying again", "msg_id", f.m.ID, "err", err)
		if clock.Sleep(ctx, n.cfg.Clock, waits.NextBackOff()) != nil {
			return
		}
	}
	rc.MsgID = f.m.ID
	if rc.Time.IsZero() {
		rc.Time = n.now()
	}
	if decisive(rc) {
		// Recorded before the lane writes the sender's next (a crash then
		// finds it settled), sent through the message's shard behind any
		// receipt of it relayed already. One relayed while the record is
		// being written can still go first (a release within the commit of
		// its hold); the origin's receipt order then ignores the late hold.
		if err := n.settled.put(f.key, rc); err != nil {
			n.log.Warn("federation settled id not recorded", "msg_id", f.m.ID, "err", err)
		}
		in.mu.Lock()
		f.hear()
		in.mu.Unlock()
		n.toShard(ctx, relayed{key: f.key, origin: f.origin, rc: rc, recorded: true})
		return
	}
	// Taken (written to the session, or kept by a durable leg): on disk
	// before the message is let go of, so NATS offering it again finds it
	// written (see Config.LaneWindow). Its outcome comes via Relay.
	if err := n.settled.put(f.key, rc); err != nil {
		n.log.Warn("federation settled id not recorded", "msg_id", f.m.ID, "err", err)
	}
	in.mu.Lock()
	f.took = n.now()
	in.mu.Unlock()
	if !answersEach(f.m.Protocol) {
		return
	}
	// A receiver that answers every message is waited for a moment, so
	// it has admitted this one before the next is written (each write is
	// a connection of its own, which it may serve in any order).
	fired, t := clock.After(n.cfg.Clock, orderWait)
	defer t.Stop()
	select {
	case <-f.heard:
	case <-ctx.Done():
	case <-fired:
	}
}

// orderWait bounds a lane's wait for a written message's outcome before
// it writes the sender's next, for a receiver that answers each message
// (Qwen Code has by then).
const orderWait = 100 * time.Millisecond

// answersEach reports whether sessions of protocol p answer every
// message, delivered or not. Claude Code says nothing of a clean
// delivery: waiting for it would cost orderWait per message, so its
// messages are written in order without waiting for an outcome; the
// other legs keep their own order (an inbox, an outbox).
func answersEach(p message.Protocol) bool { return p == message.ProtocolQwen }
