package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
	"github.com/sessiongateway/gateway/router"
)

// TestARoutedMessagesTraceReachesTheRemotePOST routes a message to a remote
// session, straight over the remote leg and through the durable outbox
// (whose worker posts later, from the trace context stored with the entry),
// and checks the POST carried the traceparent of the message's span.
func TestARoutedMessagesTraceReachesTheRemotePOST(t *testing.T) {
	for _, durable := range []bool{false, true} {
		name := "straight over the remote leg"
		if durable {
			name = "through the durable outbox"
		}
		t.Run(name, func(t *testing.T) { traceReachesPOST(t, durable) })
	}
}

func traceReachesPOST(t *testing.T, durable bool) {
	cloud := fakecloud.Start(t, fakecloud.Options{Token: e2eToken, OrgUUID: e2eOrg})
	sid := cloud.CreateSession("trace me")
	root := t.TempDir()
	tokenFile := filepath.Join(root, "token")
	if err := os.WriteFile(tokenFile, []byte(e2eToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ro := &remoteOpts{url: cloud.URL(), org: e2eOrg, tokenFile: tokenFile, follow: multi{"all"}, transport: "sse"}
	if err := ro.check(); err != nil {
		t.Fatal(err)
	}
	log := observability.NewLogger(io.Discard, nil)
	rl, err := newRemoteLeg(log, ro)
	if err != nil {
		t.Fatal(err)
	}
	var routed leg.Leg = rl
	if durable {
		state := filepath.Join(root, "state")
		if err := os.Mkdir(state, 0o700); err != nil {
			t.Fatal(err)
		}
		ob, closeStore, err := durableRemote(log, state, rl)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(closeStore)
		routed = ob
	}
	spans := tracetest.NewInMemoryExporter()
	tel, err := observability.NewTelemetry(context.Background(), observability.TelemetryConfig{Spans: spans})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	rt := router.New(router.Config{Logger: log, Metrics: tel.Metrics, Tracer: tel.Tracer()}, routed)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)

	var out router.Outbound
	testutil.Eventually(t, "the remote session takes a message", func() bool {
		out, err = rt.Send(context.Background(), router.SendRequest{To: "bridge:" + sid, Body: "hello from a span"})
		return err == nil && out.Status != message.StatusFailed
	})
	testutil.Eventually(t, "the post reached the session", func() bool {
		for _, m := range cloud.Posted(sid) {
			if m.User != nil && m.User.Content.Text() == "hello from a span" {
				return true
			}
		}
		return false
	})
	stop() // ends the message's span, which waits for a final status otherwise
	var route *tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		for _, a := range s.Attributes {
			if a.Key == router.AttrMsgID && a.Value.AsString() == out.Message.ID {
				route = &s
			}
		}
	}
	if route == nil {
		t.Fatalf("no span for message %s among %d", out.Message.ID, len(spans.GetSpans()))
	}
	want := "00-" + route.SpanContext.TraceID().String() + "-"
	var posts []string
	for _, r := range cloud.Requests() {
		if r.Method != "POST" || !strings.Contains(r.Path, sid) {
			continue
		}
		tp := r.Header.Get("traceparent")
		posts = append(posts, r.Path+" "+tp)
		if strings.HasPrefix(tp, want) {
			return
		}
	}
	t.Fatalf("no POST for the session carried trace %s: %v", route.SpanContext.TraceID(), posts)
}

// scrapeGateway reads the gateway's /metrics over its control socket and
// parses it with the Prometheus text parser.
func scrapeGateway(t *testing.T, stateDir string) map[string]*dto.MetricFamily {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", filepath.Join(stateDir, "gateway.sock"))
	}}}
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://gateway/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// value sums the samples of family name whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	var sum float64
	var found bool
next:
	for _, m := range f.GetMetric() {
		for k, v := range want {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum, found
}

func TestTheGatewaysMetricsMoveAsMessagesFlow(t *testing.T) {
	g := startBinary(t, t.TempDir(), "--legs", "claude", "--bridge=false")
	fk := newFake(t, g, "work-08", message.ModePrompting)
	before := scrapeGateway(t, g.StateDir)
	const n = 3
	for i := range n {
		out, err := g.Send(ctxT(t), api.SendBody{To: "work-08", Text: fmt.Sprintf("metered %d", i), Wait: true, Timeout: "5s"})
		if err != nil || out.Status != message.StatusDelivered {
			t.Fatalf("send %d: %v %v", i, out.Status, err)
		}
	}
	if got := len(fk.Received()); got != n {
		t.Fatalf("the fake got %d messages, want %d", got, n)
	}
	after := scrapeGateway(t, g.StateDir)
	tests := []struct {
		name   string
		family string
		labels map[string]string
		delta  float64
	}{
		{"each message sent counts out on the claude leg", "gateway_messages_total", map[string]string{"leg": "claude", "direction": "out"}, n},
		{"each route latency is observed", "gateway_route_latency_seconds", map[string]string{"leg": "claude", "direction": "out"}, n},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := value(before, tt.family, tt.labels)
			a, ok := value(after, tt.family, tt.labels)
			if !ok {
				t.Fatalf("no %s%v after sending", tt.family, tt.labels)
			}
			if a-b != tt.delta {
				t.Errorf("%s%v moved by %v, want %v", tt.family, tt.labels, a-b, tt.delta)
			}
		})
	}
	t.Run("live Claude sessions are a gauge that counts the fake", func(t *testing.T) {
		v, ok := value(after, "gateway_sessions", map[string]string{"leg": "claude"})
		if !ok || v < 1 {
			t.Fatalf("gateway_sessions{leg=claude} = %v (present %v), want at least 1", v, ok)
		}
	})
	t.Run("pending permission prompts are reported as none", func(t *testing.T) {
		if v, ok := value(after, "gateway_permissions_pending", nil); !ok || v != 0 {
			t.Fatalf("gateway_permissions_pending = %v (present %v), want 0", v, ok)
		}
	})
}
