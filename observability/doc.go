// Package observability sets up what the gateway tells its operator: JSON
// logs on slog with secrets redacted, trace ids added from the record's
// context and a level that can change while running; OpenTelemetry metrics
// served for Prometheus at /metrics and pushed over OTLP/HTTP when the
// standard OTEL_EXPORTER_OTLP_* variables say where; and a tracer provider
// with the W3C trace-context propagator installed, so a routed message's
// span reaches the remote posts it causes. It imports nothing of ours.
package observability
