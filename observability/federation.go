package observability

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// FederationReadings are the federation's figures read at collection
// time: what it keeps counting itself.
type FederationReadings struct {
	Drops      map[string]uint64 // what was read from NATS and dropped, by reason
	Lag        map[string]int64  // this host's consumers: messages pending and awaiting acknowledgement, by consumer
	Reconnects uint64            // times the link to NATS came back
}

// fedInstruments count the federation's traffic per peer host.
type fedInstruments struct {
	messages     metric.Int64Counter
	receipts     metric.Int64Counter
	redeliveries metric.Int64Counter

	mu   sync.Mutex
	read func() FederationReadings
}

func (m *Metrics) fedInstruments(meter metric.Meter) error {
	f := &m.fed
	var err error
	if f.messages, err = meter.Int64Counter("gateway.federation.messages", metric.WithDescription("Messages to and from other hosts, by peer host and direction (sent, received).")); err != nil {
		return err
	}
	if f.receipts, err = meter.Int64Counter("gateway.federation.receipts", metric.WithDescription("Receipts to and from other hosts, by peer host, direction (in: about our messages; out: about theirs) and status.")); err != nil {
		return err
	}
	if f.redeliveries, err = meter.Int64Counter("gateway.federation.redeliveries", metric.WithDescription("Messages from other hosts offered again by NATS (delivered more than once), by peer host.")); err != nil {
		return err
	}
	drops, err := meter.Int64ObservableCounter("gateway.federation.drops", metric.WithDescription("What was read from NATS and dropped, by reason (malformed, signature, ...)."))
	if err != nil {
		return err
	}
	lag, err := meter.Int64ObservableGauge("gateway.federation.consumer.lag", metric.WithDescription("Messages waiting for this host's consumers: pending plus awaiting acknowledgement, by consumer."))
	if err != nil {
		return err
	}
	reconnects, err := meter.Int64ObservableCounter("gateway.federation.reconnects", metric.WithDescription("Times the link to NATS was lost and came back."))
	if err != nil {
		return err
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		f.mu.Lock()
		read := f.read
		f.mu.Unlock()
		if read == nil {
			return nil
		}
		r := read()
		for reason, n := range r.Drops {
			o.ObserveInt64(drops, int64(n), metric.WithAttributes(attribute.String("reason", reason)))
		}
		for c, n := range r.Lag {
			o.ObserveInt64(lag, n, metric.WithAttributes(attribute.String("consumer", c)))
		}
		o.ObserveInt64(reconnects, int64(r.Reconnects))
		return nil
	}, drops, lag, reconnects)
	return err
}

// ObserveFederation sets where the federation's readings come from; read
// is called at every collection, so it must be bounded in time.
func (m *Metrics) ObserveFederation(read func() FederationReadings) {
	if m == nil {
		return
	}
	m.fed.mu.Lock()
	m.fed.read = read
	m.fed.mu.Unlock()
}

// FederationMessage counts one message to or from peer, dir "sent" or
// "received".
func (m *Metrics) FederationMessage(ctx context.Context, peer, dir string) {
	if m == nil {
		return
	}
	m.fed.messages.Add(ctx, 1, metric.WithAttributes(attribute.String("peer", peer), attribute.String("direction", dir)))
}

// FederationReceipt counts one receipt with status to or from peer, dir
// "in" or "out".
func (m *Metrics) FederationReceipt(ctx context.Context, peer, dir, status string) {
	if m == nil {
		return
	}
	m.fed.receipts.Add(ctx, 1, metric.WithAttributes(attribute.String("peer", peer),
		attribute.String("direction", dir), attribute.String("status", status)))
}

// FederationRedelivery counts one message from peer that NATS offered
// again.
func (m *Metrics) FederationRedelivery(ctx context.Context, peer string) {
	if m == nil {
		return
	}
	m.fed.redeliveries.Add(ctx, 1, metric.WithAttributes(attribute.String("peer", peer)))
}
