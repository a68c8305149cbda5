package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// ErrGraceExceeded means Run gave up waiting for the parts to stop.
var ErrGraceExceeded = errors.New("shutdown took longer than --grace; exiting with work unfinished (stored outbox messages stay stored)")

// Parts are what Run runs and stops.
type Parts struct {
	Log   *slog.Logger
	Grace time.Duration
	// Core runs until its context ends (the router, and with it every
	// leg). Its context outlives the stop signal, so the servers can
	// drain into it.
	Core func(context.Context) error
	// Servers serve on the Listener of the same index.
	Servers   []*http.Server
	Listeners []net.Listener
	// EndStreams is called before the servers shut down, to end the
	// responses that never finish by themselves (event streams); nil for
	// none.
	EndStreams func()
	// Pending counts the queued work still to flush (an outbox); nil for
	// none.
	Pending func() int
	// BeforeCore, when set, runs once the servers drained and Pending
	// flushed, before the core stops: helpers that feed the core (alias
	// workers) stop while it still handles what they accepted.
	BeforeCore func()
	// Reloaders run on each SIGHUP.
	Reloaders []Reloader
	// Notify is told READY=1 once the servers serve (every leg registered
	// before Run), and STOPPING=1 when the drain starts; nil for none.
	Notify Notify
	// Ready, when set, is called once with READY=1 (a start-up summary).
	Ready func()
}

// Run runs p's core and servers until ctx ends (SIGTERM, SIGINT) or one of
// them fails, reloading p.Reloaders on SIGHUP meanwhile. Stopping goes in
// order, within p.Grace:
//
//  1. the servers stop accepting; EndStreams ends the event streams;
//     requests in flight (sends) finish;
//  2. Pending gets until the same deadline to reach zero;
//  3. the core stops: the legs end their workers (what an outbox stores
//     stays stored), tell their subscribers and deregister.
//
// Past the grace period it returns ErrGraceExceeded without waiting
// further: the process is about to exit, and a service manager would kill
// it soon.
func Run(ctx context.Context, p Parts) error {
	// The core runs on a context of its own, so the servers can drain
	// into it after the signal.
	coreCtx, stopCore := context.WithCancel(context.WithoutCancel(ctx))
	defer stopCore()
	g, gctx := errgroup.WithContext(coreCtx)
	g.Go(func() error { return p.Core(gctx) })
	for i, s := range p.Servers {
		g.Go(func() error {
			if err := s.Serve(p.Listeners[i]); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	g.Go(func() error { onSIGHUP(gctx, p.Log, p.Reloaders); return nil })
	// The listeners were bound before Run: connections queue until Serve
	// takes them, so the gateway is ready now.
	p.send("READY=1")
	if p.Ready != nil {
		p.Ready()
	}
	stopping := make(chan struct{})
	g.Go(func() error {
		select {
		case <-ctx.Done():
			p.Log.Info("stopping: draining the API, then the legs", "grace", p.Grace.String())
		case <-gctx.Done():
		}
		p.send("STOPPING=1")
		close(stopping)
		deadline := time.Now().Add(p.Grace - coreReserve(p.Grace))
		if p.EndStreams != nil {
			p.EndStreams()
		}
		drain(p.Log, p.Servers, deadline)
		if p.Pending != nil {
			flush(gctx, p.Log, p.Pending, deadline)
		}
		if p.BeforeCore != nil {
			p.BeforeCore()
		}
		stopCore()
		return nil
	})
	// done is written once g has finished; when grace runs out first, the
	// process exits without reading it.
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	select {
	case err := <-done:
		return err
	case <-stopping:
	}
	t := time.NewTimer(p.Grace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return ErrGraceExceeded
	}
}

// coreReserve is the part of grace kept for the core after the drain: a
// Claude Code leg takes up to 2 s to tell its idle subscribers.
func coreReserve(grace time.Duration) time.Duration {
	return min(grace/4, 3*time.Second)
}

// drain stops the servers accepting and waits until deadline for requests
// in flight; what is still open then is cut.
func drain(log *slog.Logger, servers []*http.Server, deadline time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() {
			if err := s.Shutdown(ctx); err != nil {
				log.Warn("API requests still running at the drain deadline were cut", "err", err)
				_ = s.Close()
			}
		})
	}
	wg.Wait()
}

// flush waits, with the core still running, until pending reaches zero,
// deadline passes or ctx ends (a part failed). What is still queued then
// stays stored for the next start.
func flush(ctx context.Context, log *slog.Logger, pending func() int, deadline time.Time) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		n := pending()
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			log.Info("outbox not empty at shutdown; its messages stay stored for the next start", "pending", n)
			return
		case <-tick.C:
		}
	}
}

// Reloader is one thing SIGHUP reloads: it says what it did, or why not.
type Reloader struct {
	What string
	// Reload says what the setting is now and, when it kept it on purpose
	// (another layer pins it), why; an error leaves it as it was.
	Reload func() (now, reason string, err error)
}

// ReloadOn runs every reloader each time hup delivers, logging what each
// reloaded, until ctx ends. A reloader that fails leaves its part as it was.
func ReloadOn(ctx context.Context, log *slog.Logger, hup <-chan os.Signal, rs []Reloader) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			for _, r := range rs {
				got, reason, err := r.Reload()
				if err != nil {
					log.Warn("SIGHUP: reload failed; keeping the old setting", "what", r.What, "err", err)
					continue
				}
				attrs := []any{"what", r.What, "now", got}
				if reason != "" {
					attrs = append(attrs, "reason", reason)
				}
				log.Info("SIGHUP: reloaded", attrs...)
			}
		}
	}
}

// onSIGHUP reloads rs on every SIGHUP until ctx ends. Without it SIGHUP
// would kill the process, which is not what an operator reloading means.
func onSIGHUP(ctx context.Context, log *slog.Logger, rs []Reloader) {
	hup := make(chan os.Signal, 1) // one pending reload is enough: it reads the latest
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	ReloadOn(ctx, log, hup, rs)
}
