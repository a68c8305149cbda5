package federation

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// Leg is the router's view of the federation: the other hosts' sessions,
// sends to them and their receipts. It is an alias host to the router, so
// a message from another host travels the bridge's road to the local
// session (Deliver), and that session's receipts come back through Relay.
type Leg struct {
	n     *Node
	mu    sync.Mutex
	em    *leg.Emitter      // Run's, while it runs
	early []message.Receipt // reported while Run did not run, at most maxEarly
}

// maxEarly bounds the reports kept for Run; past it they are dropped and
// logged (the router then infers nothing more for those sends).
const maxEarly = 4096

var (
	_ leg.Leg       = (*Leg)(nil)
	_ leg.Readier   = (*Leg)(nil)
	_ leg.AliasHost = (*Leg)(nil)
)

// Leg returns the node's leg.
func (n *Node) Leg() *Leg { return n.leg }

// SyncAliases does nothing: other hosts learn this one's sessions from
// the roster Serve publishes.
func (l *Leg) SyncAliases(context.Context, []message.Session) error { return nil }

// SendAs sends m from sender, a session of this host, to another host's
// session.
func (l *Leg) SendAs(ctx context.Context, sender message.Session, m message.Message) (message.Receipt, error) {
	m.FromName, m.FromSession = sender.Name, sender.SessionID
	return l.Send(ctx, m)
}

// Relay sends what became of in, a message from another host, back to
// that host, the one its sender's address names.
func (l *Leg) Relay(ctx context.Context, in message.Message, rc message.Receipt) {
	rc.MsgID = in.ID
	l.n.relay(ctx, in.From, rc)
}

func (l *Leg) Name() message.Protocol { return message.ProtocolFederation }

// Sessions lists the other hosts' sessions (see Node.Sessions).
func (l *Leg) Sessions(context.Context) ([]message.Session, error) { return l.n.Sessions(), nil }

// Ready reports the link to NATS.
func (l *Leg) Ready() error { return l.n.Ready() }

// Send publishes m to the host of m.To (NAME@HOST, picked by
// m.ToSessionID) and returns sent once the stream has stored it; the
// message id is the stream's de-duplication id, so a retry is never a
// second copy. When the link is down, or the stream does not store it
// within directWait, or earlier sends are still kept, m is kept on disk
// (the spool) and published in order when the link is back: Send returns
// queued, and the sent receipt follows from Run. A full spool refuses m
// with a *SpoolFullError.
func (l *Leg) Send(ctx context.Context, m message.Message) (message.Receipt, error) {
	n := l.n
	fail := func(err error) (message.Receipt, error) {
		return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: err.Error(), Time: n.now()}, err
	}
	if !validID(m.ID) {
		return fail(fmt.Errorf("federation: message id %q is empty or too long", m.ID))
	}
	target, ok := n.Origin(m.To, m.ToSessionID)
	if !ok {
		return fail(fmt.Errorf("federation: no session %s in the federation roster", m.To))
	}
	out := m
	out.To, out.ToName, out.ToPID, out.ToSessionID = target.Address, target.Name, target.PID, target.SessionID
	out.Protocol, out.From, out.AliasOf = target.Protocol, "", ""
	b, err := n.encode(envelope{Kind: kindMessage, From: n.cfg.Host, To: target.Host, Message: &out})
	if err != nil {
		return fail(err)
	}
	n.sentTo.Put(m.ID, target.Host)
	// Earlier sends still kept go first: a sender's messages stay in order.
	if n.spool.len() == 0 && n.nc.Status() == nats.CONNECTED {
		dctx, cancel := context.WithTimeout(ctx, directWait)
		signed := true // above, to tell the cap
		err := n.publish(dctx, inSubject(target.Host), m.ID, func() ([]byte, error) {
			if signed {
				signed = false
				return b, nil
			}
			return n.resign(b)
		})
		cancel()
		switch {
		case err == nil:
			n.sent(ctx, target.Host)
			return message.Receipt{MsgID: m.ID, Status: message.StatusSent, From: m.To, Time: n.now()}, nil
		case permanent(err), n.ctx.Err() != nil:
			return fail(err)
		}
		// Not stored in time: it may have been, and the spool's copy then
		// has the same id, which the stream or the receiver's settled ids
		// drop.
	}
	if err := n.spool.add(target.Host, m.ID, b); err != nil {
		return fail(err)
	}
	return message.Receipt{MsgID: m.ID, Status: message.StatusQueued, From: m.To, Time: n.now(),
		Reason: "kept until the federation link is back"}, nil
}

// report hands a receipt of this host's own send to the router. One made
// while Run does not run (a kept send published as the link came back,
// before Run started) is kept for Run.
func (l *Leg) report(ctx context.Context, rc message.Receipt) {
	l.mu.Lock()
	em := l.em
	if em == nil {
		if len(l.early) < maxEarly {
			l.early = append(l.early, rc)
		} else {
			l.n.log.Warn("federation receipt dropped: the leg is not running", "msg_id", rc.MsgID, "status", rc.Status)
		}
	}
	l.mu.Unlock()
	if em != nil {
		em.Emit(ctx, message.Event{Type: message.EventReceipt, Receipt: &rc})
	}
}

// Run reports the receipts other hosts send back for this host's messages,
// until ctx ends. A receipt is acknowledged once it is handed to in.
func (l *Leg) Run(ctx context.Context, in chan<- message.Event) error {
	n := l.n
	// Handed out first: this host's own reports need no consumer (one
	// waiting for a cluster that is only now back).
	em := leg.NewEmitter(message.ProtocolFederation, n.now)
	em.Attach(in)
	l.mu.Lock()
	l.em = em
	early := l.early
	l.early = nil
	l.mu.Unlock()
	for _, rc := range early {
		em.Emit(ctx, message.Event{Type: message.EventReceipt, Receipt: &rc})
	}
	defer func() {
		l.mu.Lock()
		l.em = nil
		l.mu.Unlock()
		em.Close()
	}()
	cc, err := n.consume(ctx, "rc-", receiptSubject(n.cfg.Host), 4096, func(msg jetstream.Msg) { l.receipt(ctx, msg, em) })
	if err != nil {
		if ctx.Err() != nil || n.ctx.Err() != nil {
			return nil // stopped or closed while starting
		}
		return fmt.Errorf("federation: receipt consumer: %w", err)
	}
	defer cc.Stop()
	var prompts sync.WaitGroup
	defer prompts.Wait()
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	prompts.Go(func() { l.watchPrompts(pctx, em) })
	select {
	case <-ctx.Done():
	case <-n.ctx.Done():
	}
	return nil
}

func (l *Leg) receipt(ctx context.Context, msg jetstream.Msg, em *leg.Emitter) {
	e, reason := l.n.decode(msg)
	if reason == 0 && e.Kind == kindOutcome {
		l.n.outcomeIn(e)
		_ = msg.Ack()
		return
	}
	if reason == 0 && e.Kind != kindReceipt && e.Kind != kindReceipts {
		reason = ReasonMisrouted
	}
	if reason != 0 {
		l.n.drops.add(reason)
		_ = msg.Term()
		return
	}
	rcs := e.Receipts
	if e.Kind == kindReceipt {
		rcs = []message.Receipt{*e.Receipt}
	}
	for _, rc := range rcs {
		if to, ok := l.n.sentTo.Get(rc.MsgID); ok && to != e.From {
			l.n.drops.add(ReasonMisrouted) // a receipt from a host the message never went to
			continue
		}
		if !em.Emit(ctx, message.Event{Type: message.EventReceipt, Receipt: &rc}) {
			_ = msg.Nak() // offered again: the receipts handed over already are applied once more, which moves nothing
			return
		}
		l.n.receiptCounted(ctx, e.From, "in", rc.Status, nil)
	}
	_ = msg.Ack()
}
