package main

import (
	"context"
	"fmt"
	"time"
)

func init() { register("claude", claudeRows) }

// settleWindow is serve's default --settle: how long after a Claude send
// the gateway infers its delivery when no receipt came.
const settleWindow = 2 * time.Second

// claudeRows: control API POST /v1/messages until the frame is read at a
// bare sink registered as a Claude Code session, addressed by name,
// beside the raw socket (connect, auth line and frame, close), with one
// sender and with 16. The gateway serves with --bridge=false.
func claudeRows(ctx context.Context, e *Env) ([]Row, error) {
	st, err := openStage(ctx, e, "bench-sink", startClaudeSink, "--bridge=false")
	if err != nil {
		return nil, err
	}
	sink, g := st.Sink, st.G
	frame := sink.rawFrame()
	raw := func(int) error { return rawSend(sink.path, frame) }
	via := func(i int) error { return g.Send(ctx, sink.name, fmt.Sprintf("bench %d", i), false) }

	// Warm both up: connections, caches, the roster.
	if _, err := sequential(ctx, sink, e.N(200, 20), raw, via); err != nil {
		return nil, err
	}
	seq, err := sequential(ctx, sink, e.N(5000, 100), raw, via)
	if err != nil {
		return nil, err
	}
	n := e.N(3000, 100)
	cpu0 := g.CPU()
	if _, err := sequential(ctx, sink, n, via); err != nil {
		return nil, err
	}
	cpu := (g.CPU() - cpu0) / time.Duration(n)
	const senders = 16
	var rawRate, gwRate Rate
	// Two rounds each, alternating, so neither always runs second.
	for range 2 {
		if !e.Short {
			// Each Claude send's settle window (2 s by default) ends after
			// the send; the gateway inferring delivery for the messages
			// just sent would otherwise run during the raw round.
			time.Sleep(settleWindow + 500*time.Millisecond)
		}
		r, err := concurrent(ctx, sink, senders, e.N(4000, 64), raw)
		if err != nil {
			return nil, err
		}
		rawRate.N, rawRate.Span = rawRate.N+r.N, rawRate.Span+r.Span
		if r, err = concurrent(ctx, sink, senders, e.N(4000, 64), via); err != nil {
			return nil, err
		}
		gwRate.N, gwRate.Span = gwRate.N+r.N, gwRate.Span+r.Span
	}
	if err := e.Profile(ctx, g, "sequential", func() error {
		_, err := sequential(ctx, sink, 200, via)
		return err
	}); err != nil {
		return nil, err
	}
	if err := e.Profile(ctx, g, "16-senders", func() error {
		_, err := concurrent(ctx, sink, senders, 1000, via)
		return err
	}); err != nil {
		return nil, err
	}
	floors, err := floorRows(ctx, e, st.W, sink, senders)
	if err != nil {
		return nil, err
	}
	return append([]Row{
		rateRow("API -> Claude, 1 sender (msg/s)", seq[1].rate(), seq[0].rate(), "raw socket", 0.5),
		latencyRow("API -> Claude, 1 sender (latency)", seq[1], seq[0], "raw socket", 0.99, time.Millisecond),
		rateRow(fmt.Sprintf("API -> Claude, %d senders (msg/s)", senders), gwRate, rawRate, "raw socket", 0.5),
		{Path: "API -> Claude, gateway CPU per message", Gateway: ms(cpu)},
	}, floors...), nil
}
