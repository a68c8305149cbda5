// Package observability sets up what the gateway tells its operator: JSON logs
// on slog with secrets redacted, and OpenTelemetry metrics exported for
// Prometheus at /metrics. It imports nothing of ours but message.
package observability
