package federation

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// Leg is the router's view of the federation: the other hosts' sessions,
// sends to them and their receipts.
type Leg struct{ n *Node }

var (
	_ router.Leg     = (*Leg)(nil)
	_ router.Readier = (*Leg)(nil)
)

// Leg returns the node's leg.
func (n *Node) Leg() *Leg { return &Leg{n: n} }

func (l *Leg) Name() message.Protocol { return message.ProtocolFederation }

// Sessions lists the other hosts' sessions (see Node.Sessions).
func (l *Leg) Sessions(context.Context) ([]message.Session, error) { return l.n.Sessions(), nil }

// Ready reports the link to NATS.
func (l *Leg) Ready() error { return l.n.Ready() }

// Send publishes m to the host of m.To (NAME@HOST, picked by
// m.ToSessionID) and returns sent once the stream has stored it; the
// message id is the stream's de-duplication id, so a retry is never a
// second copy.
func (l *Leg) Send(ctx context.Context, m message.Message) (message.Receipt, error) {
	n := l.n
	fail := func(err error) (message.Receipt, error) {
		return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: err.Error(), Time: time.Now()}, err
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
	b, err := encode(envelope{Kind: kindMessage, From: n.cfg.Host, To: target.Host, Message: &out})
	if err != nil {
		return fail(err)
	}
	if err := n.publish(ctx, inSubject(target.Host), b, m.ID); err != nil {
		return fail(err)
	}
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent, From: m.To, Time: time.Now()}, nil
}

// Run reports the receipts other hosts send back for this host's messages,
// until ctx ends. A receipt is acknowledged once it is handed to in.
func (l *Leg) Run(ctx context.Context, in chan<- message.Event) error {
	n := l.n
	cons, err := retry(ctx, func() (jetstream.Consumer, error) {
		return n.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       "rc-" + n.cfg.Host,
			FilterSubject: receiptSubject(n.cfg.Host),
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       n.cfg.AckWait,
			MaxDeliver:    -1,
			MaxAckPending: 4096,
		})
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("federation: receipt consumer: %w", err)
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) { l.receipt(ctx, msg, in) },
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			n.log.Debug("federation receipt consumer", "err", err)
		}))
	if err != nil {
		return fmt.Errorf("federation: receipt consumer: %w", err)
	}
	defer cc.Stop()
	select {
	case <-ctx.Done():
	case <-n.ctx.Done():
	}
	return nil
}

func (l *Leg) receipt(ctx context.Context, msg jetstream.Msg, in chan<- message.Event) {
	e, reason := decode(msg.Data(), l.n.cfg.Host)
	if reason == 0 && e.Kind != kindReceipt {
		reason = ReasonMisrouted
	}
	if reason != 0 {
		l.n.drops.add(reason)
		_ = msg.Term()
		return
	}
	rc := *e.Receipt
	select {
	case in <- message.Event{Type: message.EventReceipt, Time: time.Now(), Leg: message.ProtocolFederation, Receipt: &rc}:
		_ = msg.Ack()
	case <-ctx.Done():
		_ = msg.Nak()
	}
}
