// Package observability sets up what the gateway tells its operator: logs
// on slog (text at a terminal, JSON lines otherwise) with secrets
// redacted, trace ids added from the record's context and a level that can
// change while running; OpenTelemetry metrics served for Prometheus at
// /metrics (with the Go runtime, process and build-info collectors) and
// pushed over OTLP/HTTP when the standard OTEL_EXPORTER_OTLP_* variables
// say where; a tracer provider with the W3C trace-context propagator
// installed, so a routed message's span reaches the remote posts it
// causes, both under one service.name; and the start-up summary a person
// at a terminal reads. It imports nothing of ours.
package observability
