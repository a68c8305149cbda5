package observability

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Metrics holds the gateway's instruments. The zero value is not usable; a nil
// *Metrics is, and records nothing, so packages need no nil checks.
type Metrics struct {
	provider   *sdkmetric.MeterProvider
	registry   *prometheus.Registry
	messages   metric.Int64Counter
	receipts   metric.Int64Counter
	drops      metric.Int64Counter
	reconnects metric.Int64Counter
	latency    metric.Float64Histogram

	attrs attrCache // the routed-message counters' attribute sets

	mu     sync.Mutex
	gauges Gauges
	fed    fedInstruments    // federation.go
	notify notifyInstruments // notify.go
}

// Gauges are the readings taken at collection time rather than counted as
// they happen. Any func may be nil; the gauge is then not reported.
type Gauges struct {
	Sessions       func() map[string]int // live sessions by leg
	PendingPrompts func() int            // permission prompts waiting for an answer
	OutboxDepth    func() int            // remote messages stored and not yet acknowledged
	// NoticesLost counts, by leg, the drop and hold notices a leg could not
	// hand to the router (it was behind or stopping): a drop whose notice
	// is lost is in no other count.
	NoticesLost func() map[string]uint64
}

// routeBuckets suit a local socket write (sub-millisecond) as well as a
// remote POST retried with backoff (seconds).
var routeBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// NewMetrics builds a meter provider whose readings are served by Handler,
// and also pushed by each of readers (OTLP, see NewTelemetry). Each gateway
// gets its own registry, so tests can run several side by side.
func NewMetrics(readers ...sdkmetric.Reader) (*Metrics, error) {
	return newMetrics(serviceResource(DefaultServiceName, ""), Build{}, readers...)
}

// newMetrics is NewMetrics for the service res describes (the same
// resource as the traces'), with the Go runtime, process and build-info
// collectors on the Prometheus registry.
func newMetrics(res *resource.Resource, b Build, readers ...sdkmetric.Reader) (*Metrics, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	if err := registerProcessCollectors(reg, b); err != nil {
		return nil, err
	}
	opts := []sdkmetric.Option{sdkmetric.WithReader(exp), sdkmetric.WithResource(res)}
	for _, r := range readers {
		opts = append(opts, sdkmetric.WithReader(r))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	m := &Metrics{provider: mp, registry: reg}
	meter := mp.Meter("github.com/sessiongateway/gateway")
	if err := errors.Join(m.instruments(meter), m.fedInstruments(meter), m.notifyInstruments(meter)); err != nil {
		_ = mp.Shutdown(context.Background())
		return nil, err
	}
	return m, nil
}

func (m *Metrics) instruments(meter metric.Meter) error {
	var err error
	if m.messages, err = meter.Int64Counter("gateway.messages", metric.WithDescription("Peer messages by leg and direction (in, out, bridged).")); err != nil {
		return err
	}
	if m.receipts, err = meter.Int64Counter("gateway.receipts", metric.WithDescription("Receipts by leg, direction and status.")); err != nil {
		return err
	}
	if m.drops, err = meter.Int64Counter("gateway.drops", metric.WithDescription("Inbound messages turned away, by leg and reason.")); err != nil {
		return err
	}
	if m.reconnects, err = meter.Int64Counter("gateway.remote.reconnects", metric.WithDescription("Times a remote session's live stream was lost and is being re-opened.")); err != nil {
		return err
	}
	if m.latency, err = meter.Float64Histogram("gateway.route.latency", metric.WithUnit("s"),
		metric.WithDescription("Time from routing a message to its first receipt, by leg and direction."),
		metric.WithExplicitBucketBoundaries(routeBuckets...)); err != nil {
		return err
	}
	sessions, err := meter.Int64ObservableGauge("gateway.sessions", metric.WithDescription("Live sessions by leg, as last listed."))
	if err != nil {
		return err
	}
	prompts, err := meter.Int64ObservableGauge("gateway.permissions.pending", metric.WithDescription("Permission prompts waiting for an answer."))
	if err != nil {
		return err
	}
	depth, err := meter.Int64ObservableGauge("gateway.outbox.depth", metric.WithDescription("Remote messages stored and not yet acknowledged."))
	if err != nil {
		return err
	}
	lost, err := meter.Int64ObservableCounter("gateway.notices.lost", metric.WithDescription("Drop and hold notices a leg could not hand to the router, by leg."))
	if err != nil {
		return err
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		m.mu.Lock()
		g := m.gauges
		m.mu.Unlock()
		if g.Sessions != nil {
			for leg, n := range g.Sessions() {
				o.ObserveInt64(sessions, int64(n), metric.WithAttributes(attribute.String("leg", leg)))
			}
		}
		if g.PendingPrompts != nil {
			o.ObserveInt64(prompts, int64(g.PendingPrompts()))
		}
		if g.OutboxDepth != nil {
			o.ObserveInt64(depth, int64(g.OutboxDepth()))
		}
		if g.NoticesLost != nil {
			for leg, n := range g.NoticesLost() {
				o.ObserveInt64(lost, int64(n), metric.WithAttributes(attribute.String("leg", leg)))
			}
		}
		return nil
	}, sessions, prompts, depth, lost)
	return err
}

// Observe sets where the gauges read from, replacing what was set before.
// Each func is called at every collection, so it must be cheap and safe to
// call from any goroutine.
func (m *Metrics) Observe(g Gauges) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.gauges = g
	m.mu.Unlock()
}

// Message counts one message on leg going dir ("in", "out" or "bridged").
func (m *Metrics) Message(ctx context.Context, leg, dir string) {
	if m == nil {
		return
	}
	m.messages.Add(ctx, 1, m.attrs.option(attrKey{leg: leg, dir: dir}))
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

// Reconnect counts one lost live stream of a remote session on leg.
func (m *Metrics) Reconnect(ctx context.Context, leg string) {
	if m == nil {
		return
	}
	m.reconnects.Add(ctx, 1, metric.WithAttributes(attribute.String("leg", leg)))
}

// RouteLatency records how long a message routed over leg took to its first
// receipt, and which status that receipt had.
func (m *Metrics) RouteLatency(ctx context.Context, leg, dir, status string, d time.Duration) {
	if m == nil {
		return
	}
	m.latency.Record(ctx, d.Seconds(), m.attrs.option(attrKey{leg: leg, dir: dir, status: status, hasStatus: true}))
}

// Handler serves the Prometheus text exposition.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Shutdown flushes and stops the provider, pushing a last reading to any
// OTLP collector.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.provider.Shutdown(ctx)
}

// attrCache keeps the attribute set of each leg, direction and status a
// routed message was counted under: building one sorts and hashes its
// attributes, which every message did. The keys come from the gateway's
// own few legs, directions and statuses; past maxAttrSets a set is built
// afresh each time rather than kept.
type attrCache struct {
	sets sync.Map // attrKey -> metric.MeasurementOption
	n    atomic.Int32
}

type attrKey struct {
	leg, dir, status string
	hasStatus        bool
}

const maxAttrSets = 256

// option is the measurement option of k's attributes.
func (c *attrCache) option(k attrKey) metric.MeasurementOption {
	if o, ok := c.sets.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	kv := []attribute.KeyValue{attribute.String("leg", k.leg), attribute.String("direction", k.dir)}
	if k.hasStatus {
		kv = append(kv, attribute.String("status", k.status))
	}
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	if c.n.Load() < maxAttrSets {
		if _, loaded := c.sets.LoadOrStore(k, o); !loaded {
			c.n.Add(1)
		}
	}
	return o
}
