package main

import "context"

// Stage is what the local suites (claude, qwen, bridge) measure on: a
// World, one sink in it, and a gateway serving in it that lists the sink.
type Stage[S frameSink] struct {
	W    *World
	Sink S
	G    *Gateway
}

// openStage makes a World, starts a sink named name in it with start,
// runs a gateway there with args and waits until it lists the sink. All
// of it is stopped when the suite ends.
func openStage[S frameSink](ctx context.Context, e *Env, name string, start func(*Env, *World, string) (S, error), args ...string) (*Stage[S], error) {
	w, err := e.NewWorld()
	if err != nil {
		return nil, err
	}
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
	return &Stage[S]{W: w, Sink: sink, G: g}, nil
}
