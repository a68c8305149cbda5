package router

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
)

// Span attribute keys of a routed message.
const (
	AttrMsgID       = attribute.Key("gateway.msg_id")
	AttrLeg         = attribute.Key("gateway.leg")          // the leg the message leaves on
	AttrSourceLeg   = attribute.Key("gateway.source_leg")   // a bridged message's leg of arrival
	AttrDirection   = attribute.Key("gateway.direction")    // out or bridged
	AttrStatus      = attribute.Key("gateway.status")       // the final status, set when the span ends
	AttrFirstStatus = attribute.Key("gateway.first_status") // the first receipt's status (sent, queued, failed)
)

func (r *Router) tracer() trace.Tracer {
	if r.cfg.Tracer != nil {
		return r.cfg.Tracer
	}
	return noop.NewTracerProvider().Tracer("")
}

// Span ends that are no status of the message: the router forgot it
// (KeepOutbound) or stopped before it reached a final status.
const (
	statusForgotten = "forgotten"
	statusStopped   = "router-stopped"
)

// traceRoute opens the span of one routed message; its context is what
// the leg's Send gets, so a remote leg's POST carries its traceparent. The
// returned func notes the first receipt and records the route latency;
// the span stays open until the message reaches a final status (apply),
// which it then carries as gateway.status.
func (r *Router) traceRoute(ctx context.Context, l leg.Leg, o *outbound, dir string) (context.Context, func(message.Receipt)) {
	start := r.cfg.Clock.Now()
	m := o.msg
	attrs := []attribute.KeyValue{AttrMsgID.String(m.ID), AttrLeg.String(string(l.Name())), AttrDirection.String(dir)}
	if o.fwd != nil {
		attrs = append(attrs, AttrSourceLeg.String(string(o.fwd.source.Name())))
	}
	ctx, span := r.tracer().Start(ctx, "gateway.route", trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	return ctx, func(rc message.Receipt) {
		st := rc.Status.String()
		span.SetAttributes(AttrFirstStatus.String(st))
		if rc.Status == message.StatusFailed {
			span.SetStatus(codes.Error, rc.Reason)
		}
		r.cfg.Metrics.RouteLatency(ctx, string(l.Name()), dir, st, r.cfg.Clock.Now().Sub(start))
		r.log.DebugContext(ctx, "routed", "msg_id", m.ID, "leg", l.Name(), "direction", dir, "status", st)
		r.mu.Lock()
		defer r.mu.Unlock()
		o.span = span
		o.endSpanIfFinal() // a receipt may have overtaken the send's return
		if rc.Status.Final() {
			o.span.SetAttributes(AttrStatus.String(st))
			o.endSpan("")
		}
	}
}

// endSpanIfFinal ends o's span once o has a final status. Callers hold r.mu.
func (o *outbound) endSpanIfFinal() {
	if o.span != nil && o.track.Status.Final() {
		o.span.SetAttributes(AttrStatus.String(o.track.Status.String()))
		o.endSpan("")
	}
}

// endSpan ends o's span if still open, with why when it ends before a
// final status. Callers hold r.mu; a nil o is fine.
func (o *outbound) endSpan(why string) {
	if o == nil || o.span == nil {
		return
	}
	if why != "" {
		o.span.SetAttributes(AttrStatus.String(why))
	}
	o.span.End()
	o.span = nil
}

// noteLink counts a remote session's lost live stream.
func (r *Router) noteLink(ctx context.Context, ev message.Event) {
	if ev.Link != nil && ev.Link.State == message.LinkReconnecting {
		r.cfg.Metrics.Reconnect(ctx, string(ev.Leg))
	}
}

// Gauges reads live sessions per leg (from the roster, listed afresh when
// older than RosterTTL) and pending permission prompts, for Metrics.Observe.
func (r *Router) Gauges() observability.Gauges {
	return observability.Gauges{
		Sessions: func() map[string]int {
			roster, ok := r.cachedRoster()
			if !ok {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				roster = r.Sessions(ctx)
			}
			n := map[string]int{}
			for _, l := range r.legs {
				n[string(l.Name())] = 0 // a leg with nobody reads 0, not absent
			}
			for _, s := range roster {
				if s.AliasOf == "" {
					n[string(s.Protocol)]++
				}
			}
			return n
		},
		PendingPrompts: func() int { return len(r.Permissions()) },
		NoticesLost: func() map[string]uint64 {
			n := map[string]uint64{}
			for _, l := range r.legs {
				if c, ok := l.(NoticeCounter); ok {
					n[string(l.Name())] = c.NoticesLost()
				}
			}
			return n
		},
	}
}

// NoticeCounter is a leg that counts the drop and hold notices it could not
// hand to the router.
type NoticeCounter interface{ NoticesLost() uint64 }
