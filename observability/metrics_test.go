package observability

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestMetricsAreScrapedAndMove(t *testing.T) {
	m, err := NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m.Message(ctx, "claude", "out")
	m.Message(ctx, "claude", "out")
	m.Receipt(ctx, "claude", "in", "held")
	m.Drop(ctx, "claude", "duplicate")

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("metrics do not parse: %v\n%s", err, rec.Body.String())
	}
	want := map[string]float64{
		"gateway_messages_total": 2,
		"gateway_receipts_total": 1,
		"gateway_drops_total":    1,
	}
	for name, v := range want {
		f, ok := fams[name]
		if !ok {
			t.Fatalf("no family %s in\n%s", name, rec.Body.String())
		}
		if got := f.GetMetric()[0].GetCounter().GetValue(); got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.Message(context.Background(), "claude", "in") // must not panic
	if err := m.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestNilMetricsCountNoFederation(t *testing.T) {
	var m *Metrics
	ctx := context.Background()
	m.FederationMessage(ctx, "b", "sent") // none of these may panic
	m.FederationReceipt(ctx, "b", "in", "delivered")
	m.FederationRedelivery(ctx, "b")
	m.ObserveFederation(func() FederationReadings { return FederationReadings{} })
}

// The routed-message counters reuse one attribute set per label values:
// each series must still carry its own labels and count.
func TestRoutedMessagesAreCountedUnderTheirOwnLabels(t *testing.T) {
	m, err := NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 3 {
		m.Message(ctx, "claude", "out")
	}
	m.Message(ctx, "qwen", "bridged")
	m.RouteLatency(ctx, "claude", "out", "sent", time.Millisecond)
	m.RouteLatency(ctx, "claude", "out", "failed", time.Millisecond)
	m.RouteLatency(ctx, "claude", "out", "failed", time.Millisecond)

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for name, f := range fams {
		if name != "gateway_messages_total" && !strings.HasPrefix(name, "gateway_route_latency") {
			continue
		}
		for _, mt := range f.GetMetric() {
			key := name
			for _, l := range mt.GetLabel() {
				if l.GetName() == "leg" || l.GetName() == "direction" || l.GetName() == "status" {
					key += " " + l.GetName() + "=" + l.GetValue()
				}
			}
			if c := mt.GetCounter(); c != nil {
				got[key] = c.GetValue()
			} else if h := mt.GetHistogram(); h != nil {
				got[key] = float64(h.GetSampleCount())
			}
		}
	}
	for key, want := range map[string]float64{
		"gateway_messages_total direction=out leg=claude":                      3,
		"gateway_messages_total direction=bridged leg=qwen":                    1,
		"gateway_route_latency_seconds direction=out leg=claude status=sent":   1,
		"gateway_route_latency_seconds direction=out leg=claude status=failed": 2,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v (all: %v)", key, got[key], want, got)
		}
	}
}
