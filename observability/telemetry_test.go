package observability

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestLogLinesCarryTheTraceOfTheirContext(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := NewTelemetry(context.Background(), TelemetryConfig{Spans: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	ctx, span := tel.Tracer().Start(context.Background(), "route")
	sc := span.SpanContext()
	tests := []struct {
		name      string
		ctx       context.Context
		log       func(l *slog.Logger, ctx context.Context)
		wantTrace string
		wantSpan  string
	}{
		{"a line logged in a span names its trace and span", ctx,
			func(l *slog.Logger, ctx context.Context) { l.InfoContext(ctx, "routed") }, sc.TraceID().String(), sc.SpanID().String()},
		{"a line logged by a derived logger does too", ctx,
			func(l *slog.Logger, ctx context.Context) { l.With("leg", "claude").InfoContext(ctx, "routed") }, sc.TraceID().String(), sc.SpanID().String()},
		{"a line logged without a span names none", context.Background(),
			func(l *slog.Logger, ctx context.Context) { l.InfoContext(ctx, "routed") }, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(NewLogger(&buf, slog.LevelInfo), tt.ctx)
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("%v: %s", err, buf.String())
			}
			got, _ := line["trace_id"].(string)
			gotSpan, _ := line["span_id"].(string)
			if got != tt.wantTrace || gotSpan != tt.wantSpan {
				t.Errorf("trace_id %q span_id %q, want %q %q: %s", got, gotSpan, tt.wantTrace, tt.wantSpan, buf.String())
			}
		})
	}
	span.End()
	if n := len(exp.GetSpans()); n != 1 {
		t.Errorf("%d spans exported, want 1", n)
	}
}

func TestTheTraceContextPropagatorIsInstalled(t *testing.T) {
	tel, err := NewTelemetry(context.Background(), TelemetryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	ctx, span := tel.Tracer().Start(context.Background(), "route")
	defer span.End()
	h := http.Header{}
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(h))
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if got := h.Get("traceparent"); got != want {
		t.Fatalf("traceparent = %q, want %q", got, want)
	}
}

func TestALevelVarMovesTheLoggersLevel(t *testing.T) {
	var buf bytes.Buffer
	lv := new(slog.LevelVar)
	lv.Set(slog.LevelWarn)
	l := slog.New(WithLevel(NewLogger(&buf, slog.LevelInfo).Handler(), lv))
	l.Info("before")
	lv.Set(slog.LevelDebug)
	l.Debug("after")
	if bytes.Contains(buf.Bytes(), []byte("before")) {
		t.Errorf("an info line passed a warn level: %s", buf.String())
	}
	if !bytes.Contains(buf.Bytes(), []byte("after")) {
		t.Errorf("a debug line was left out below a handler built for info: %s", buf.String())
	}
}

// collector is a loopback OTLP/HTTP endpoint that notes the paths posted.
type collector struct {
	mu    sync.Mutex
	paths map[string]int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.paths[r.URL.Path]++
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func TestOTLPIsOnOnlyWhenTheStandardVariablesSayWhere(t *testing.T) {
	c := &collector{paths: map[string]int{}}
	srv := httptest.NewServer(c)
	defer srv.Close()
	tests := []struct {
		name  string
		env   map[string]string
		want  []string
		posts []string
	}{
		{"without variables nothing is pushed", nil, nil, nil},
		{"the common endpoint turns on metrics and traces", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL},
			[]string{"metrics", "traces"}, []string{"/v1/metrics", "/v1/traces"}},
		{"a metrics endpoint turns on metrics only", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": srv.URL + "/v1/metrics"},
			[]string{"metrics"}, []string{"/v1/metrics"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.mu.Lock()
			clear(c.paths)
			c.mu.Unlock()
			for k, v := range tt.env {
				t.Setenv(k, v) // the exporters read their settings from the process
			}
			tel, err := NewTelemetry(context.Background(), TelemetryConfig{Getenv: func(k string) string { return tt.env[k] }})
			if err != nil {
				t.Fatal(err)
			}
			if len(tel.OTLP) != len(tt.want) || (len(tt.want) > 0 && tel.OTLP[0] != tt.want[0]) {
				t.Errorf("OTLP = %v, want %v", tel.OTLP, tt.want)
			}
			tel.Metrics.Message(context.Background(), "claude", "out")
			_, span := tel.Tracer().Start(context.Background(), "route")
			span.End()
			if err := tel.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, p := range tt.posts {
				if c.paths[p] == 0 {
					t.Errorf("nothing posted to %s: %v", p, c.paths)
				}
			}
			if len(tt.posts) == 0 && len(c.paths) != 0 {
				t.Errorf("posted without being asked: %v", c.paths)
			}
		})
	}
}
