package approver

import (
	"context"
	"log/slog"

	"github.com/sessiongateway/gateway/router"
)

// Start runs the approver for addr beside the router, when addr is set,
// until the returned stop is called. It is built before the router runs,
// so it sees every prompt, and like the router it outlives the stop
// signal: notices and replies under way finish while the API drains.
func Start(ctx context.Context, log *slog.Logger, rt *router.Router, addr string) (stop func()) {
	if addr == "" {
		return func() {}
	}
	a := New(rt, Config{Address: addr, Logger: log})
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.Run(ctx)
	}()
	return func() { cancel(); <-done }
}
