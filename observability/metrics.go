package observability

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Metrics holds the gateway's instruments. The zero value is not usable; a nil
// *Metrics is, and records nothing, so packages need no nil checks.
type Metrics struct {
	provider *sdkmetric.MeterProvider
	registry *prometheus.Registry
	messages metric.Int64Counter
	receipts metric.Int64Counter
	drops    metric.Int64Counter
}

// NewMetrics builds a meter provider whose readings are served by Handler.
// Each gateway gets its own registry, so tests can run several side by side.
func NewMetrics() (*Metrics, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	m := &Metrics{provider: mp, registry: reg}
	meter := mp.Meter("github.com/sessiongateway/gateway")
	if m.messages, err = meter.Int64Counter("gateway.messages", metric.WithDescription("Peer messages by leg and direction (in, out).")); err != nil {
		return nil, err
	}
	if m.receipts, err = meter.Int64Counter("gateway.receipts", metric.WithDescription("Receipts by leg, direction and status.")); err != nil {
		return nil, err
	}
	if m.drops, err = meter.Int64Counter("gateway.drops", metric.WithDescription("Inbound messages turned away, by leg and reason.")); err != nil {
		return nil, err
	}
	return m, nil
}

// Message counts one message on leg going dir ("in" or "out").
func (m *Metrics) Message(ctx context.Context, leg, dir string) {
	if m == nil {
		return
	}
	m.messages.Add(ctx, 1, metric.WithAttributes(attribute.String("leg", leg), attribute.String("direction", dir)))
}

// Receipt counts one receipt with status on leg going dir.
func (m *Metrics) Receipt(ctx context.Context, leg, dir, status string) {
	if m == nil {
		return
	}
	m.receipts.Add(ctx, 1, metric.WithAttributes(attribute.String("leg", leg),
		attribute.String("direction", dir), attribute.String("status", status)))
}

// Drop counts one inbound message turned away for reason.
func (m *Metrics) Drop(ctx context.Context, leg, reason string) {
	if m == nil {
		return
	}
	m.drops.Add(ctx, 1, metric.WithAttributes(attribute.String("leg", leg), attribute.String("reason", reason)))
}

// Handler serves the Prometheus text exposition.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Shutdown flushes and stops the provider.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.provider.Shutdown(ctx)
}
