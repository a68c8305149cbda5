package federation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/message"
)

// Local is what Serve needs of this gateway: the sessions it reaches (to
// publish) and a way to deliver a message that arrived for one of them
// (the router's own send). Deliver returns the first receipt; an error
// means no outcome yet, and the message is offered again later.
type Local struct {
	Sessions func(ctx context.Context) ([]message.Session, error)
	Deliver  func(ctx context.Context, m message.Message) (message.Receipt, error)
}

// rosterPoll is how often Serve looks for a change in the local sessions.
const rosterPoll = time.Second

// Serve publishes the local sessions and consumes the messages other hosts
// send to this one, until ctx ends. Each message is delivered once: one
// NATS offers again (a lost acknowledgement, a failover) is answered with
// the receipt it already got, from a bounded window of settled ids.
func (n *Node) Serve(ctx context.Context, local Local) error {
	deliver := n.onlyPublished(local.Deliver)
	cc, err := n.consume(ctx, "in-", inSubject(n.cfg.Host), 1024, func(msg jetstream.Msg) { n.inbound(ctx, msg, deliver) })
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("federation: inbound consumer: %w", err)
	}
	defer cc.Stop()
	t := time.NewTicker(rosterPoll)
	defer t.Stop()
	for {
		if local.Sessions != nil {
			if ss, err := local.Sessions(ctx); err == nil {
				if err := n.PublishSessions(ctx, ss); err != nil && ctx.Err() == nil {
					n.log.Warn("federation roster not published", "err", err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-n.ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// consume creates (or opens) this host's durable consumer of subject and
// runs handle for each message. It waits for the consumer's leader first,
// and pulls with a short heartbeat: a pull the cluster could not answer (a
// consumer or stream leader being elected) is noticed and made again in
// seconds, not tens of them.
func (n *Node) consume(ctx context.Context, prefix, subject string, pending int, handle func(jetstream.Msg)) (jetstream.ConsumeContext, error) {
	cons, err := retry(ctx, func() (jetstream.Consumer, error) {
		return n.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       prefix + n.cfg.Host,
			FilterSubject: subject,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       n.cfg.AckWait,
			MaxDeliver:    -1,
			MaxAckPending: pending,
		})
	})
	if err != nil {
		return nil, err
	}
	_, err = retry(ctx, func() (bool, error) {
		info, err := cons.Info(ctx)
		if err == nil && info.Cluster != nil && info.Cluster.Leader == "" {
			err = errNoLeader
		}
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	return cons.Consume(handle,
		jetstream.PullExpiry(5*time.Second), jetstream.PullHeartbeat(time.Second),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			n.log.Debug("federation consumer", "subject", subject, "err", err)
		}))
}

// errNoLeader is a consumer whose leader is still being elected.
var errNoLeader = errors.New("the consumer has no leader yet")

// inbound handles one message for this host. It runs on the consumer's
// one goroutine, so messages are delivered in stream order.
func (n *Node) inbound(ctx context.Context, msg jetstream.Msg, deliver func(context.Context, message.Message) (message.Receipt, error)) {
	e, reason := n.decode(msg)
	if reason == 0 && e.Kind == kindAnswer {
		n.answerIn(ctx, msg, e)
		return
	}
	if reason == 0 && e.Kind != kindMessage {
		reason = ReasonMisrouted
	}
	if reason != 0 {
		n.drops.add(reason)
		n.log.Debug("federation message dropped", "reason", reason.String()) // counted; a flood must not flood the log
		_ = msg.Term()
		return
	}
	m := *e.Message
	ctx, end := n.received(ctx, msg, e.From, m.ID)
	defer end()
	key := settledKey(e.From, m.ID)
	if rc, ok := n.settled.Get(key); ok {
		// Delivered before; say so again in case the receipt was lost.
		if rc.Status == message.StatusQueued {
			_ = msg.Ack()
			return
		}
		n.ackAfterReceipt(ctx, msg, e.From, rc)
		return
	}
	m.From, m.FromName = fromAddress(m.FromName, e.From)
	// Known before delivery: a receipt may be relayed before Deliver returns.
	n.origin.Put(m.ID, e.From)
	dctx, cancel := context.WithTimeout(ctx, n.cfg.AckWait*2/3)
	rc, err := deliver(dctx, m)
	cancel()
	if err != nil && rc.Status == 0 {
		n.log.Warn("federation delivery failed; offered again later", "msg_id", m.ID, "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	rc.MsgID = m.ID
	if rc.Time.IsZero() {
		rc.Time = time.Now()
	}
	if rc.Status == message.StatusQueued {
		// Taken by the router; its receipts follow through Relay, which
		// may have settled the id already.
		if _, ok := n.settled.Get(key); !ok {
			n.settled.Put(key, rc)
		}
		_ = msg.Ack()
		return
	}
	n.settled.Put(key, rc)
	n.ackAfterReceipt(ctx, msg, e.From, rc)
}

// ackAfterReceipt sends rc to the origin and acknowledges msg; when the
// receipt cannot be sent, msg is offered again and the receipt re-sent
// from the settled window then.
func (n *Node) ackAfterReceipt(ctx context.Context, msg jetstream.Msg, origin string, rc message.Receipt) {
	if err := n.sendReceipt(ctx, origin, rc); err != nil {
		_ = msg.NakWithDelay(time.Second)
		return
	}
	_ = msg.Ack()
}

// settledKey names a message by its origin too, so one host cannot mark
// another's message id delivered before it arrives.
func settledKey(origin, id string) string { return origin + "/" + id }

// fromAddress is the sender of a message from host as this host shows it:
// NAME@HOST and NAME.HOST, as the sender's session is listed here.
func fromAddress(name, host string) (address, display string) {
	if name == "" {
		return host, host
	}
	return name + "@" + host, name + "." + host
}

// Relay sends a later receipt (delivered, held, denied, ...) of a message
// that came from another host back to that host. It reports false when
// the message did not come through the federation (or is too old to be
// remembered).
func (n *Node) Relay(ctx context.Context, rc message.Receipt) bool {
	origin, ok := n.origin.Get(rc.MsgID)
	if !ok {
		return false
	}
	if rc.Time.IsZero() {
		rc.Time = time.Now()
	}
	n.settled.Put(settledKey(origin, rc.MsgID), rc)
	if err := n.sendReceipt(ctx, origin, rc); err != nil {
		n.log.Warn("federation receipt not sent", "msg_id", rc.MsgID, "status", rc.Status, "err", err)
	}
	return true
}

func (n *Node) sendReceipt(ctx context.Context, host string, rc message.Receipt) error {
	b, err := n.encode(envelope{Kind: kindReceipt, From: n.cfg.Host, To: host, Receipt: &rc})
	if err != nil {
		return err
	}
	err = n.publish(ctx, receiptSubject(host), b, "rc."+rc.MsgID+"."+rc.Status.String())
	n.receiptCounted(ctx, host, "out", rc.Status, err)
	return err
}

// publish writes b to subject, retrying with the same message id (so the
// stream keeps one copy) until it is stored or ctx ends: a leader change
// or a reconnect is a pause, not a loss.
func (n *Node) publish(ctx context.Context, subject string, b []byte, id string) error {
	wait := 50 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := n.js.PublishMsg(actx, &nats.Msg{Subject: subject, Data: b, Header: traceHeader(ctx)}, jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			return nil
		}
		if permanent(err) {
			return fmt.Errorf("federation: publish to %s: %w", subject, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("federation: publish to %s: %w", subject, err)
		case <-n.ctx.Done():
			return fmt.Errorf("federation: closed: %w", err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// permanent reports whether a publish error would recur on a retry.
func permanent(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) ||
		errors.As(err, &api) && api.Code == 400
}
