package observability

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// DefaultServiceName is service.name when OTEL_SERVICE_NAME is not set.
const DefaultServiceName = "gateway"

// Build says which build is running, for the gateway_build_info gauge.
type Build struct {
	Version  string // "" reads "unknown"
	Revision string // "" reads the VCS revision stamped into the binary, else "unknown"
}

func (b Build) labels() prometheus.Labels {
	if b.Version == "" {
		b.Version = "unknown"
	}
	if b.Revision == "" {
		b.Revision = "unknown"
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && s.Value != "" {
					b.Revision = s.Value
				}
			}
		}
	}
	return prometheus.Labels{"version": b.Version, "goversion": runtime.Version(), "revision": b.Revision}
}

// registerProcessCollectors adds what every Go daemon's dashboard expects:
// go_* (runtime: goroutines, GC, memory), process_* (CPU, RSS, open
// files) and gateway_build_info, a gauge of 1 whose labels name the build.
func registerProcessCollectors(reg *prometheus.Registry, b Build) error {
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gateway_build_info", Help: "The running build: version, Go version and VCS revision as labels; always 1.",
		ConstLabels: b.labels(),
	})
	info.Set(1)
	return errors.Join(
		reg.Register(collectors.NewGoCollector()),
		reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		reg.Register(info),
	)
}

// serviceResource is the one resource traces and metrics share: a
// collector joins them by service.name.
func serviceResource(name, version string) *resource.Resource {
	if name == "" {
		name = DefaultServiceName
	}
	attrs := []resource.Option{resource.WithTelemetrySDK(), resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName(name))}
	if version != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(version)))
	}
	res, err := resource.New(context.Background(), attrs...)
	if err != nil { // only a detector can fail, and these are fixed values
		return resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(name))
	}
	return res
}
