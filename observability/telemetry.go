package observability

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TracerName names the gateway's spans' instrumentation scope.
const TracerName = "github.com/sessiongateway/gateway"

// TelemetryConfig says where metrics and traces go besides /metrics.
type TelemetryConfig struct {
	// Getenv reads the standard OTEL_EXPORTER_OTLP_* variables that turn
	// the OTLP exporters on; the exporters then read their own settings
	// (endpoint, headers, protocol) from the process environment.
	Getenv func(string) string
	// Version is reported as service.version and in gateway_build_info;
	// Revision too (empty: the binary's VCS stamp).
	Version, Revision string
	// Spans, when set, also receives every span synchronously (tests).
	Spans sdktrace.SpanExporter
}

// Telemetry is the gateway's metrics and tracer, with their exporters.
type Telemetry struct {
	Metrics *Metrics
	tp      *sdktrace.TracerProvider
	OTLP    []string // which OTLP exporters are on: "metrics", "traces"
}

// NewTelemetry builds the metrics (always served for Prometheus, pushed
// over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT or ..._METRICS_ENDPOINT is
// set) and a tracer provider (exported over OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT or ..._TRACES_ENDPOINT is set). Spans are
// recorded either way, so trace ids reach the logs and traceparent headers.
// It installs the provider and the W3C trace-context propagator as the
// process's globals, which the Sessions API client uses.
func NewTelemetry(ctx context.Context, c TelemetryConfig) (*Telemetry, error) {
	if c.Getenv == nil {
		c.Getenv = func(string) string { return "" }
	}
	set := func(specific string) bool {
		return c.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || c.Getenv(specific) != ""
	}
	t := &Telemetry{}
	var readers []sdkmetric.Reader
	if set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP metrics exporter: %w", err)
		}
		readers = append(readers, sdkmetric.NewPeriodicReader(exp))
		t.OTLP = append(t.OTLP, "metrics")
	}
	// One service.name for both signals: OTEL_SERVICE_NAME, else "gateway".
	res := serviceResource(c.Getenv("OTEL_SERVICE_NAME"), c.Version)
	m, err := newMetrics(res, Build{Version: c.Version, Revision: c.Revision}, readers...)
	if err != nil {
		return nil, err
	}
	t.Metrics = m
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			_ = m.Shutdown(ctx)
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
		t.OTLP = append(t.OTLP, "traces")
	}
	if c.Spans != nil {
		opts = append(opts, sdktrace.WithSyncer(c.Spans))
	}
	t.tp = sdktrace.NewTracerProvider(opts...)
	otel.SetTracerProvider(t.tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return t, nil
}

// Tracer is the gateway's tracer; a nil Telemetry gives a no-op one.
func (t *Telemetry) Tracer() trace.Tracer {
	if t == nil {
		return nil
	}
	return t.tp.Tracer(TracerName)
}

// Shutdown flushes both exporters and stops the providers.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return errors.Join(t.tp.Shutdown(ctx), t.Metrics.Shutdown(ctx))
}
