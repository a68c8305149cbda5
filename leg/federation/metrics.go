package federation

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
)

// meter is where the node counts, set once by Instrument; nil counts
// nothing (observability.Metrics is nil-safe).
type meter struct {
	p atomic.Pointer[observability.Metrics]
}

func (m *meter) get() *observability.Metrics { return m.p.Load() }

// Instrument makes the node count into m, per peer host: messages sent
// and received, receipts both ways by status, redeliveries; and read at
// collection time: drops by reason, this host's consumer lag, reconnects.
// A nil Node or m does nothing.
func (n *Node) Instrument(m *observability.Metrics) {
	if n == nil || m == nil {
		return
	}
	n.meter.p.Store(m)
	m.ObserveFederation(n.readings)
}

// lagTimeout bounds the consumer lookups of one collection.
const lagTimeout = time.Second

func (n *Node) readings() observability.FederationReadings {
	r := observability.FederationReadings{Drops: map[string]uint64{}, Lag: map[string]int64{}, Reconnects: n.nc.Stats().Reconnects}
	for reason, c := range n.Dropped() {
		r.Drops[reason.String()] = c
	}
	ctx, cancel := context.WithTimeout(n.ctx, lagTimeout)
	defer cancel()
	for _, name := range []string{"in-" + n.cfg.Host, "rc-" + n.cfg.Host} {
		if cs := n.consumerStatus(ctx, name); cs.Error == "" {
			r.Lag[name] = int64(cs.Pending) + int64(cs.AckPending)
		}
	}
	return r
}

// sent counts a message published to peer.
func (n *Node) sent(ctx context.Context, peer string) {
	n.meter.get().FederationMessage(ctx, peer, "sent")
}

// receiptCounted counts a receipt to (dir "out") or from (dir "in") peer,
// unless err says it did not go.
func (n *Node) receiptCounted(ctx context.Context, peer, dir string, st message.Status, err error) {
	if err == nil {
		n.meter.get().FederationReceipt(ctx, peer, dir, st.String())
	}
}

// Span names and attributes of the federation's side of a trace.
const (
	spanReceive = "gateway.federation.receive"
	AttrPeer    = attribute.Key("gateway.peer_host")
)

// traceHeader carries ctx's trace context (W3C traceparent) in a NATS
// message's headers, so the receiving host continues the sender's trace.
func traceHeader(ctx context.Context) nats.Header {
	h := nats.Header{}
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(h))
	return h
}

// received counts msg, a message from peer, and its redelivery, and opens
// the receiving side's span as a child of the sender's (from its
// traceparent header). The returned func ends the span.
func (n *Node) received(ctx context.Context, msg jetstream.Msg, peer, id string) (context.Context, func()) {
	m := n.meter.get()
	m.FederationMessage(ctx, peer, "received")
	if md, err := msg.Metadata(); err == nil && md.NumDelivered > 1 {
		m.FederationRedelivery(ctx, peer)
	}
	ctx = otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(msg.Headers()))
	ctx, span := otel.Tracer(observability.TracerName).Start(ctx, spanReceive, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("gateway.msg_id", id), AttrPeer.String(peer)))
	return ctx, func() { span.End() }
}
