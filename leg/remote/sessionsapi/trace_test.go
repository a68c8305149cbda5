package sessionsapi_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
)

// traceparent splits a W3C traceparent header into trace id and parent id.
func traceparent(t *testing.T, v string) (traceID, parentID string) {
	t.Helper()
	parts := strings.Split(v, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 {
		t.Fatalf("traceparent %q is not W3C version 00", v)
	}
	return parts[1], parts[2]
}

func TestTraceContext(t *testing.T) {
	t.Run("each attempt carries a child span of the caller's, named after the operation", func(t *testing.T) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		defer tp.Shutdown(context.Background())
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{TracerProvider: tp})
		id := e.srv.CreateSession("traced")
		e.srv.Fail(fakecloud.FailSpec{Method: "GET", Path: "/v1/sessions/" + id, Status: 500})

		ctx, caller := tp.Tracer("test").Start(context.Background(), "caller")
		if _, err := e.c.GetSession(ctx, id); err != nil {
			t.Fatal(err)
		}
		caller.End()

		var op tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if s.Name == "GetSession" {
				op = s
			}
		}
		if !op.SpanContext.IsValid() {
			t.Fatalf("no GetSession span among %d", len(exp.GetSpans()))
		}
		if op.Parent.SpanID() != caller.SpanContext().SpanID() || op.SpanKind != trace.SpanKindClient {
			t.Fatalf("GetSession's parent is %v (kind %v), want the caller %v", op.Parent.SpanID(), op.SpanKind, caller.SpanContext().SpanID())
		}
		reqs := e.requests("/v1/sessions/" + id)
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		for _, r := range reqs {
			tid, pid := traceparent(t, r.Header.Get("traceparent"))
			if tid != caller.SpanContext().TraceID().String() || pid != op.SpanContext.SpanID().String() {
				t.Fatalf("traceparent %q, want trace %s parent %s", r.Header.Get("traceparent"), caller.SpanContext().TraceID(), op.SpanContext.SpanID())
			}
		}
		attempts := -1
		for _, a := range op.Attributes {
			if a.Key == "sessionsapi.attempts" {
				attempts = int(a.Value.AsInt64())
			}
		}
		if attempts != 2 {
			t.Fatalf("span says %d attempts", attempts)
		}
	})
	t.Run("a failed operation's span records the error", func(t *testing.T) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		defer tp.Shutdown(context.Background())
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{TracerProvider: tp})
		if _, err := e.c.GetSession(context.Background(), "session_nope"); err == nil {
			t.Fatal("found a session that does not exist")
		}
		spans := exp.GetSpans()
		if len(spans) != 1 || spans[0].Status.Code != codes.Error || len(spans[0].Events) == 0 {
			t.Fatalf("spans %+v", spans)
		}
	})
	t.Run("without a tracer the caller's own span context travels", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{TracerProvider: noop.NewTracerProvider()})
		tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
		sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
		ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}))
		if _, err := e.c.ListSessions(ctx); err != nil {
			t.Fatal(err)
		}
		h, err := e.c.StreamHeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		if got := e.requests("/v1/sessions")[0].Header.Get("traceparent"); got != want {
			t.Fatalf("REST traceparent %q, want %q", got, want)
		}
		if got := h.Get("traceparent"); got != want {
			t.Fatalf("stream traceparent %q, want %q", got, want)
		}
	})
	t.Run("with no span at all no traceparent is invented", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{TracerProvider: noop.NewTracerProvider()})
		if _, err := e.c.ListSessions(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := e.requests("/v1/sessions")[0].Header.Get("traceparent"); got != "" {
			t.Fatalf("traceparent %q", got)
		}
	})
}
