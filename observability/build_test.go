package observability

import (
	"context"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// scrapeFamilies reads m's Prometheus exposition.
func scrapeFamilies(t *testing.T, m *Metrics) map[string]map[string]string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{} // family -> the first sample's labels
	for name, f := range fams {
		labels := map[string]string{}
		if len(f.GetMetric()) > 0 {
			for _, l := range f.GetMetric()[0].GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
		}
		out[name] = labels
	}
	return out
}

func TestTracesAndMetricsNameOneService(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"without OTEL_SERVICE_NAME both say gateway", nil, "gateway"},
		{"OTEL_SERVICE_NAME names both", map[string]string{"OTEL_SERVICE_NAME": "gw-east"}, "gw-east"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spans := tracetest.NewInMemoryExporter()
			tel, err := NewTelemetry(context.Background(), TelemetryConfig{Getenv: func(k string) string { return tt.env[k] }, Version: "1.2.3", Spans: spans})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
			_, span := tel.Tracer().Start(context.Background(), "route")
			span.End()
			got := spans.GetSpans()
			if len(got) != 1 {
				t.Fatalf("%d spans", len(got))
			}
			traceName, _ := got[0].Resource.Set().Value(semconv.ServiceNameKey)
			metricName := scrapeFamilies(t, tel.Metrics)["target_info"]["service_name"]
			if traceName.AsString() != tt.want || metricName != tt.want {
				t.Errorf("service.name: traces %q, metrics %q, want %q for both", traceName.AsString(), metricName, tt.want)
			}
		})
	}
}

func TestMetricsCarryRuntimeProcessAndBuildInfo(t *testing.T) {
	tel, err := NewTelemetry(context.Background(), TelemetryConfig{Version: "1.2.3", Revision: "abc123"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	fams := scrapeFamilies(t, tel.Metrics)
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_open_fds", "gateway_build_info"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("no %s in /metrics", name)
		}
	}
	want := map[string]string{"version": "1.2.3", "revision": "abc123", "goversion": runtime.Version()}
	for k, v := range want {
		if got := fams["gateway_build_info"][k]; got != v {
			t.Errorf("gateway_build_info{%s} = %q, want %q", k, got, v)
		}
	}
}
