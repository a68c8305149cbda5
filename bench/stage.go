package main

import (
	"context"
	"time"
)

// trustAfter is how old a registry file's mtime must be before the gateway
// keeps its parse rather than reading the file again on every send
// (leg/uds.FileCache's racy window, 2 s, with a margin).
const trustAfter = 2500 * time.Millisecond

// Stage is what the local suites (claude, qwen, bridge) measure on: a
// World, one sink in it, and a gateway serving in it that lists the sink.
type Stage[S frameSink] struct {
	W    *World
	Sink S
	G    *Gateway
}

// openStage makes a World, starts a sink named name in it with start,
// runs a gateway there with args and waits until it lists the sink, and
// until the sink's registry files are old enough for the gateway to trust
// its parse of them, as it does for any session that has run for more
// than a moment. All of it is stopped when the suite ends.
func openStage[S frameSink](ctx context.Context, e *Env, name string, start func(*Env, *World, string) (S, error), args ...string) (*Stage[S], error) {
	w, err := e.NewWorld()
	if err != nil {
		return nil, err
	}
	registered := time.Now()
	sink, err := start(e, w, name)
	if err != nil {
		return nil, err
	}
	g, err := e.StartGateway(ctx, w, args...)
	if err != nil {
		return nil, err
	}
	if err := g.WaitListed(ctx, name); err != nil {
		return nil, err
	}
	select {
	case <-time.After(time.Until(registered.Add(trustAfter))):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &Stage[S]{W: w, Sink: sink, G: g}, nil
}
