package observability

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// notifyInstruments read the notifier's own counters at collection time.
type notifyInstruments struct {
	mu   sync.Mutex
	read func() map[string]uint64
}

func (m *Metrics) notifyInstruments(meter metric.Meter) error {
	c, err := meter.Int64ObservableCounter("gateway.notifications", metric.WithDescription(
		"Notifications and their action links, by result: sent, failed (after every retry), dropped (a target's queue full, counted for each target it missed), action_done, action_refused (used, expired or forged), action_failed."))
	if err != nil {
		return err
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		m.notify.mu.Lock()
		read := m.notify.read
		m.notify.mu.Unlock()
		if read == nil {
			return nil
		}
		for result, n := range read() {
			o.ObserveInt64(c, int64(n), metric.WithAttributes(attribute.String("result", result)))
		}
		return nil
	}, c)
	return err
}

// ObserveNotifications sets where the notifier's counts come from; read is
// called at every collection. A nil read observes nothing.
func (m *Metrics) ObserveNotifications(read func() map[string]uint64) {
	if m == nil {
		return
	}
	m.notify.mu.Lock()
	m.notify.read = read
	m.notify.mu.Unlock()
}
