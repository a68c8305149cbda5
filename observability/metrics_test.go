package observability

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

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
