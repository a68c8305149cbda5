package federation

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
	"github.com/sessiongateway/gateway/router"
)

// scrape reads m's /metrics: each family's samples as "label=value,..." ->
// value, labels in name order.
func scrape(t *testing.T, m *observability.Metrics) map[string]map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	out := map[string]map[string]float64{}
	for name, f := range fams {
		out[name] = map[string]float64{}
		for _, s := range f.GetMetric() {
			var ls []string
			for _, l := range s.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out[name][strings.Join(ls, ",")] = value(s)
		}
	}
	return out
}

func value(s *dto.Metric) float64 {
	switch {
	case s.GetCounter() != nil:
		return s.GetCounter().GetValue()
	case s.GetGauge() != nil:
		return s.GetGauge().GetValue()
	}
	return -1
}

// TestOneTraceSpansBothHostsAndEachCountsPerPeer sends one message from a
// to c whose first delivery fails (so c tries it again: NATS offers a
// message again only when c does not keep it in progress, after a crash),
// and a malformed one, and checks c's receiving span continues a's trace
// and both hosts' counts, exactly.
// tracing installs, for one test, a tracer provider recording every span
// and the W3C propagator as the process's globals, as serve does.
func tracing(t *testing.T) (*tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
		_ = tp.Shutdown(context.Background())
	})
	return spans, tp
}

func TestOneTraceSpansBothHostsAndEachCountsPerPeer(t *testing.T) {
	spans, tp := tracing(t)

	c := sharedCluster(t)
	tag := randomID()[:6]
	ha, hc := "tr-a-"+tag, "tr-c-"+tag
	a := join(t, c.url(0), ha)
	cc := join(t, c.url(2), hc)
	ma, _ := observability.NewMetrics()
	mc, _ := observability.NewMetrics()
	a.Instrument(ma)
	cc.Instrument(mc)
	var tries atomic.Int32
	sink := session("sink", "s-sink", message.ProtocolQwen)
	local := Local{
		Sessions: func(context.Context) ([]message.Session, error) { return []message.Session{sink}, nil },
		Deliver: func(_ context.Context, m message.Message) (message.Receipt, error) {
			if tries.Add(1) == 1 {
				return message.Receipt{}, errors.New("not now") // offered again
			}
			return message.Receipt{MsgID: m.ID, Status: message.StatusDelivered}, nil
		},
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = cc.Serve(sctx, local) }()
	t.Cleanup(func() { cancel(); <-done })
	serve(t, a, &peer{})
	receipts := run(t, a)
	ctx := testutil.Context(t, 30*time.Second)
	testutil.Eventually(t, "a lists sink@"+hc, func() bool { _, ok := a.Origin("sink@"+hc, "s-sink"); return ok })

	sendCtx, send := tp.Tracer("test").Start(ctx, "send")
	if _, err := a.Leg().Send(sendCtx, message.Message{ID: "tr-" + tag, To: "sink@" + hc, ToSessionID: "s-sink", Body: "traced"}); err != nil {
		t.Fatal(err)
	}
	send.End()
	select {
	case ev := <-receipts:
		if ev.Receipt.Status != message.StatusDelivered {
			t.Fatalf("receipt %+v", ev.Receipt)
		}
	case <-ctx.Done():
		t.Fatal("no receipt")
	}
	if _, err := a.js.Publish(ctx, inSubject(hc), []byte("not json")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "c counted the drop", func() bool { return cc.Dropped()[ReasonMalformed] == 1 })

	// c's receiving span (one: c held the message while it tried again) is
	// a child of a's span.
	var got int
	for _, s := range spans.GetSpans() {
		if s.Name != spanReceive {
			continue
		}
		got++
		if s.SpanContext.TraceID() != send.SpanContext().TraceID() || s.Parent.SpanID() != send.SpanContext().SpanID() || !s.Parent.IsRemote() {
			t.Errorf("c's span %s has trace %s parent %s, want trace %s parent %s", s.Name, s.SpanContext.TraceID(), s.Parent.SpanID(), send.SpanContext().TraceID(), send.SpanContext().SpanID())
		}
	}
	if got != 1 || tries.Load() != 2 {
		t.Fatalf("%d receiving spans, %d tries; want one span, two tries", got, tries.Load())
	}

	sa, sc := scrape(t, ma), scrape(t, mc)
	want := []struct {
		fams   map[string]map[string]float64
		family string
		labels string
		value  float64
	}{
		{sa, "gateway_federation_messages_total", "direction=sent,peer=" + hc, 1},
		{sa, "gateway_federation_receipts_total", "direction=in,peer=" + hc + ",status=delivered", 1},
		{sc, "gateway_federation_messages_total", "direction=received,peer=" + ha, 1},
		{sc, "gateway_federation_receipts_total", "direction=out,peer=" + ha + ",status=delivered", 1},
		{sc, "gateway_federation_drops_total", "reason=malformed", 1},
		{sc, "gateway_federation_consumer_lag", "consumer=in-" + hc, 0},
		{sa, "gateway_federation_consumer_lag", "consumer=in-" + ha, 0},
		{sa, "gateway_federation_consumer_lag", "consumer=rc-" + ha, 0},
		{sc, "gateway_federation_reconnects_total", "", 0},
	}
	for _, w := range want {
		v, ok := w.fams[w.family][w.labels]
		if !ok || v != w.value {
			t.Errorf("%s{%s} = %v (listed %v), want %v; family: %v", w.family, w.labels, v, ok, w.value, w.fams[w.family])
		}
	}
}

// TestTheReceivingHostsRouteContinuesTheSendersTrace routes a message
// from a's router to a session behind c's, and checks c's route to that
// session is in a's trace, under c's receiving span.
func TestTheReceivingHostsRouteContinuesTheSendersTrace(t *testing.T) {
	spans, tp := tracing(t)
	c := sharedCluster(t)
	tag := randomID()[:6]
	ha, hc := "rt-tr-a-"+tag, "rt-tr-c-"+tag
	a, cc := join(t, c.url(0), ha), join(t, c.url(2), hc)
	traced := func(n *Node, local leg.Leg) *router.Router {
		rt := router.New(router.Config{Bridge: true, Tracer: tp.Tracer(observability.TracerName), Host: n.Host()}, local, n.Leg())
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = rt.Run(ctx) })
		wg.Go(func() { _ = n.ServeRouter(ctx, rt) })
		t.Cleanup(func() { cancel(); wg.Wait() })
		return rt
	}
	ra := traced(a, newSinkLeg(session("alice", "s-alice", message.ProtocolQwen)))
	traced(cc, newSinkLeg(session("sink", "s-sink", message.ProtocolQwen)))
	ctx := testutil.Context(t, 30*time.Second)
	testutil.Eventually(t, "a resolves sink@"+hc, func() bool { _, _, err := ra.Resolve(ctx, "sink@"+hc); return err == nil })
	out, err := ra.Send(ctx, router.SendRequest{To: "sink@" + hc, Body: "traced", FromName: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if done, err := ra.Wait(ctx, out.Message.ID); err != nil || done.Status != message.StatusDelivered {
		t.Fatalf("wait: %+v, %v", done, err)
	}
	route := func(dir string) (sdktrace.ReadOnlySpan, bool) {
		for _, s := range spans.GetSpans().Snapshots() {
			for _, kv := range s.Attributes() {
				if s.Name() == "gateway.route" && kv.Key == router.AttrDirection && kv.Value.AsString() == dir {
					return s, true
				}
			}
		}
		return nil, false
	}
	var out0, bridged sdktrace.ReadOnlySpan
	testutil.Eventually(t, "both routes' spans ended", func() bool {
		var ok1, ok2 bool
		out0, ok1 = route("out")
		bridged, ok2 = route("bridged")
		return ok1 && ok2
	})
	if bridged.SpanContext().TraceID() != out0.SpanContext().TraceID() {
		t.Fatalf("c's route is in trace %s, a's in %s", bridged.SpanContext().TraceID(), out0.SpanContext().TraceID())
	}
	// The receiving span c's route is under (the provider is global: a
	// receive of another node still running may be recorded too).
	var recv sdktrace.ReadOnlySpan
	for _, s := range spans.GetSpans().Snapshots() {
		if s.Name() == spanReceive && s.SpanContext().SpanID() == bridged.Parent().SpanID() {
			recv = s
		}
	}
	if recv == nil || recv.Parent().SpanID() != out0.SpanContext().SpanID() {
		t.Fatalf("c's route is not under c's receiving span, under a's route")
	}
}
