package router

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
)

type telemetryRig struct {
	r       *Router
	leg     *legtest.Fake
	spans   *tracetest.InMemoryExporter
	metrics *observability.Metrics

	mu       sync.Mutex
	legSpans []trace.SpanContext // the span context each Send was given
}

func (g *telemetryRig) sendSpan(i int) trace.SpanContext {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.legSpans[i]
}

func startTelemetry(t *testing.T, sendErr error) *telemetryRig {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	m, err := observability.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	g := &telemetryRig{leg: newFake(), spans: exp, metrics: m}
	g.leg.OnSend = func(ctx context.Context, m message.Message) (message.Receipt, error) {
		g.mu.Lock()
		g.legSpans = append(g.legSpans, trace.SpanContextFromContext(ctx))
		g.mu.Unlock()
		if sendErr != nil {
			return message.Receipt{}, sendErr
		}
		return message.Receipt{MsgID: m.ID, Status: message.StatusSent}, nil
	}
	r := New(Config{Metrics: m, Tracer: tp.Tracer("test")}, g.leg)
	m.Observe(r.Gauges())
	g.r = r
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return g
}

// scrape parses /metrics with the Prometheus text parser.
func scrape(t *testing.T, m *observability.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("metrics do not parse: %v\n%s", err, rec.Body.String())
	}
	return fams
}

// sample finds the metric of family name whose labels include want.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f, ok := fams[name]
	if !ok {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		return m
	}
	return nil
}

func TestEachRoutedMessageHasOneSpanWhoseContextReachesTheLeg(t *testing.T) {
	tests := []struct {
		name      string
		sendErr   error
		receipt   message.Status // sent later by the receiver; 0 for none
		wantFirst string
		wantFinal string
		wantError bool
	}{
		{"a delivered message's span ends at delivery, with both statuses", nil, message.StatusDelivered, "sent", "delivered", false},
		{"a held then denied message's span ends at the denial", nil, message.StatusDenied, "sent", "denied", false},
		{"a message the leg cannot send is an error span that ends at once", errors.New("socket gone"), 0, "failed", "failed", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startTelemetry(t, tt.sendErr)
			var ids []string
			for range 3 {
				out, err := g.r.Send(context.Background(), SendRequest{To: "review", Body: "hi"})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, out.Message.ID)
			}
			if tt.receipt != 0 {
				if n := len(g.spans.GetSpans()); n != 0 {
					t.Fatalf("%d spans ended before any final status", n)
				}
				for _, id := range ids {
					g.leg.Emit(t, message.Event{Type: message.EventReceipt, Leg: message.ProtocolClaude,
						Receipt: &message.Receipt{MsgID: id, Status: tt.receipt}})
				}
				for _, id := range ids {
					if _, err := g.r.Wait(context.Background(), id); err != nil {
						t.Fatal(err)
					}
				}
			}
			spans := g.spans.GetSpans()
			if len(spans) != len(ids) {
				t.Fatalf("%d spans for %d messages", len(spans), len(ids))
			}
			for i, s := range spans {
				attrs := map[string]string{}
				for _, a := range s.Attributes {
					attrs[string(a.Key)] = a.Value.String()
				}
				if attrs[string(AttrMsgID)] != ids[i] || attrs[string(AttrLeg)] != "claude" || attrs[string(AttrDirection)] != "out" ||
					attrs[string(AttrFirstStatus)] != tt.wantFirst || attrs[string(AttrStatus)] != tt.wantFinal {
					t.Errorf("span %d attributes = %v, want msg %s on claude, out, first %s, final %s", i, attrs, ids[i], tt.wantFirst, tt.wantFinal)
				}
				if got := s.Status.Code.String() == "Error"; got != tt.wantError {
					t.Errorf("span %d status %v, want error %v", i, s.Status, tt.wantError)
				}
				if sc := g.sendSpan(i); sc.TraceID() != s.SpanContext.TraceID() || sc.SpanID() != s.SpanContext.SpanID() {
					t.Errorf("leg.Send %d ran in span %v, not the message's %v", i, sc, s.SpanContext)
				}
			}
		})
	}
}

func TestASpanStillOpenWhenTheRouterStopsIsEnded(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	r := New(Config{Tracer: tp.Tracer("test")}, newFake())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	if _, err := r.Send(context.Background(), SendRequest{To: "review", Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	var got string
	for _, a := range spans[0].Attributes {
		if a.Key == AttrStatus {
			got = a.Value.AsString()
		}
	}
	if got != statusStopped {
		t.Errorf("status %q, want %q", got, statusStopped)
	}
}

func TestMetricsMoveAsMessagesFlow(t *testing.T) {
	g := startTelemetry(t, nil)
	before := scrape(t, g.metrics)
	if m := sample(before, "gateway_messages_total", map[string]string{"direction": "out"}); m != nil {
		t.Fatalf("messages counted before any was sent: %v", m)
	}
	var ids []string
	for range 2 {
		out, err := g.r.Send(context.Background(), SendRequest{To: "review", Body: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, out.Message.ID)
	}
	g.leg.Emit(t, message.Event{Type: message.EventReceipt, Leg: message.ProtocolClaude,
		Receipt: &message.Receipt{MsgID: ids[0], Status: message.StatusHeld}})
	g.leg.Emit(t, message.Event{Type: message.EventDrop, Leg: message.ProtocolClaude,
		Drop: &message.Drop{Reason: message.DropDuplicate}})
	g.leg.Emit(t, message.Event{Type: message.EventLink, Leg: message.ProtocolClaude,
		Link: &message.Link{SessionID: "s", State: message.LinkReconnecting}})
	g.leg.Emit(t, message.Event{Type: message.EventLink, Leg: message.ProtocolClaude,
		Link: &message.Link{SessionID: "s", State: message.LinkConnected}})
	// The leg's events pass through the router's queue: wait until the
	// last one was counted (a final scrape decides the test, not a timer).
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		fams = scrape(t, g.metrics)
		if sample(fams, "gateway_remote_reconnects_total", nil) != nil {
			break
		}
	}
	counters := []struct {
		name   string
		family string
		labels map[string]string
		want   float64
	}{
		{"every message sent is counted out on its leg", "gateway_messages_total", map[string]string{"leg": "claude", "direction": "out"}, 2},
		{"an inbound receipt is counted by status", "gateway_receipts_total", map[string]string{"leg": "claude", "direction": "in", "status": "held"}, 1},
		{"a drop is counted by reason", "gateway_drops_total", map[string]string{"leg": "claude", "reason": "duplicate"}, 1},
		{"a lost live stream is one reconnect, its recovery none", "gateway_remote_reconnects_total", map[string]string{"leg": "claude"}, 1},
	}
	for _, c := range counters {
		t.Run(c.name, func(t *testing.T) {
			m := sample(fams, c.family, c.labels)
			if m == nil {
				t.Fatalf("no %s%v", c.family, c.labels)
			}
			if got := m.GetCounter().GetValue(); got != c.want {
				t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
			}
		})
	}
	t.Run("the route latency histogram has one observation per message", func(t *testing.T) {
		m := sample(fams, "gateway_route_latency_seconds", map[string]string{"leg": "claude", "direction": "out", "status": "sent"})
		if m == nil {
			t.Fatalf("no route latency histogram in %v", keys(fams))
		}
		if got := m.GetHistogram().GetSampleCount(); got != 2 {
			t.Errorf("latency observations = %d, want 2", got)
		}
	})
	t.Run("live sessions are read from the roster per leg", func(t *testing.T) {
		m := sample(fams, "gateway_sessions", map[string]string{"leg": "claude"})
		if m == nil {
			t.Fatalf("no sessions gauge in %v", keys(fams))
		}
		if got := m.GetGauge().GetValue(); got != 3 {
			t.Errorf("sessions = %v, want 3", got)
		}
	})
	t.Run("pending permission prompts are a gauge", func(t *testing.T) {
		m := sample(fams, "gateway_permissions_pending", nil)
		if m == nil {
			t.Fatalf("no pending prompts gauge in %v", keys(fams))
		}
		if got := m.GetGauge().GetValue(); got != 0 {
			t.Errorf("pending prompts = %v, want 0", got)
		}
	})
}

func keys(fams map[string]*dto.MetricFamily) []string {
	var ks []string
	for k := range fams {
		ks = append(ks, k)
	}
	return ks
}

func TestCloseAllEndsEveryWatchWithTheReason(t *testing.T) {
	h := NewHub(8, 8)
	_, _, before := h.Subscribe(-1)
	h.CloseAll(ErrShuttingDown)
	_, _, after := h.Subscribe(-1)
	for name, s := range map[string]*Sub{"a watch open at shutdown": before, "a watch opened after shutdown": after} {
		t.Run(name+" ends with ErrShuttingDown", func(t *testing.T) {
			if _, ok := <-s.C; ok {
				t.Fatal("the subscription is still open")
			}
			if !errors.Is(s.Err(), ErrShuttingDown) {
				t.Fatalf("Err = %v, want ErrShuttingDown", s.Err())
			}
		})
	}
}

// The notices a leg could not hand on are a counter per leg: such a drop
// is in no other count.
func TestLostNoticesAreCountedPerLeg(t *testing.T) {
	m, err := observability.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	leg := newFake() // it has lost 7 notices
	leg.LostNotices = 7
	r := New(Config{Metrics: m}, leg.With(legtest.CountsNotices))
	m.Observe(r.Gauges())
	got := sample(scrape(t, m), "gateway_notices_lost_total", map[string]string{"leg": "claude"})
	if got == nil || got.GetCounter().GetValue() != 7 {
		t.Fatalf("gateway_notices_lost_total{leg=claude} = %v, want 7", got)
	}
}
