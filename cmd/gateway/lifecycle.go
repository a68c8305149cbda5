package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sessiongateway/gateway/router"
)

// defaultGrace is how long a stopping gateway may take: long enough for a
// remote POST in flight, short of the usual 30 s before a service manager
// or container runtime sends SIGKILL.
const defaultGrace = 10 * time.Second

// lifecycleOpts are serve's --grace flag and what SIGHUP reloads.
type lifecycleOpts struct {
	grace time.Duration
	// level re-reads the wanted log level on SIGHUP; ok false leaves the
	// level as it is. The default reads GATEWAY_LOG_LEVEL; the config
	// layer may replace it with one that re-reads the config file.
	level func() (lvl slog.Level, ok bool, err error)
}

func lifecycleFlags(fs *flag.FlagSet, e *env) *lifecycleOpts {
	o := &lifecycleOpts{grace: defaultGrace}
	fs.Var((*graceValue)(&o.grace), "grace", "on SIGTERM or SIGINT: how long to drain API requests, flush the outbox and deregister before exiting (env GATEWAY_GRACE)")
	o.level = func() (slog.Level, bool, error) {
		v := strings.TrimSpace(e.getenv("GATEWAY_LOG_LEVEL"))
		if v == "" {
			return 0, false, nil
		}
		var l slog.Level
		if err := l.UnmarshalText([]byte(v)); err != nil {
			return 0, false, fmt.Errorf("GATEWAY_LOG_LEVEL %q: want debug, info, warn or error", v)
		}
		return l, true, nil
	}
	return o
}

// graceValue is a duration flag that refuses a grace period that would
// cut every shutdown short.
type graceValue time.Duration

func (g *graceValue) String() string { return time.Duration(*g).String() }

// Get makes it a flag.Getter of a time.Duration, which the configuration
// layer reads as a duration key.
func (g *graceValue) Get() any { return time.Duration(*g) }

func (g *graceValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("want a positive duration such as 10s")
	}
	*g = graceValue(d)
	return nil
}

// errGraceExceeded means the gateway gave up waiting for its parts to stop.
var errGraceExceeded = errors.New("shutdown took longer than --grace; exiting with work unfinished (stored outbox messages stay stored)")

// reloader is one thing SIGHUP reloads: it says what it did, or why not.
type reloader struct {
	what   string
	reload func() (string, error)
}

// levelReloader moves lv to what o.level reads.
func (o *lifecycleOpts) levelReloader(lv *slog.LevelVar) reloader {
	return reloader{what: "log level", reload: func() (string, error) {
		if o.level == nil {
			return "unchanged", nil
		}
		l, ok, err := o.level()
		if err != nil || !ok {
			return "unchanged", err
		}
		lv.Set(l)
		return strings.ToLower(l.String()), nil
	}}
}

// reloadOn runs every reloader each time hup delivers, logging what each
// reloaded, until ctx ends. A reloader that fails leaves its part as it was.
func reloadOn(ctx context.Context, log *slog.Logger, hup <-chan os.Signal, rs []reloader) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			for _, r := range rs {
				got, err := r.reload()
				if err != nil {
					log.Warn("SIGHUP: reload failed; keeping the old setting", "what", r.what, "err", err)
					continue
				}
				log.Info("SIGHUP: reloaded", "what", r.what, "now", got)
			}
		}
	}
}

// onSIGHUP reloads rs on every SIGHUP until ctx ends. Without it SIGHUP
// would kill the process, which is not what an operator reloading means.
func onSIGHUP(ctx context.Context, log *slog.Logger, rs []reloader) {
	hup := make(chan os.Signal, 1) // one pending reload is enough: it reads the latest
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reloadOn(ctx, log, hup, rs)
}

// runUntilStopped runs the router (and with it every leg) and the API
// servers until ctx ends (SIGTERM, SIGINT) or one of them fails, reloading
// rs on SIGHUP meanwhile. Stopping goes in order, within grace:
//
//  1. the API stops accepting; event watchers are told the gateway is
//     shutting down; requests in flight (sends) finish;
//  2. the outbox (pending: how many messages it still holds; nil without
//     one) gets until the same deadline to deliver what it holds;
//  3. the legs stop: the outbox worker ends (what is stored stays stored),
//     idle subscribers hear exited, and every registration is removed.
//
// Past grace it returns errGraceExceeded without waiting further: the
// process is about to exit, and a service manager would kill it soon.
func runUntilStopped(ctx context.Context, log *slog.Logger, grace time.Duration, rt *router.Router,
	servers []*http.Server, listeners []net.Listener, pending func() int, rs []reloader) error {
	// The legs run on a context of their own, so the API can drain into
	// them after the signal.
	legsCtx, stopLegs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLegs()
	g, gctx := errgroup.WithContext(legsCtx)
	g.Go(func() error { return rt.Run(gctx) })
	for i, s := range servers {
		g.Go(func() error {
			if err := s.Serve(listeners[i]); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	g.Go(func() error { onSIGHUP(gctx, log, rs); return nil })
	stopping := make(chan struct{})
	g.Go(func() error {
		select {
		case <-ctx.Done():
			log.Info("stopping: draining the API, then the legs", "grace", grace.String())
		case <-gctx.Done():
		}
		close(stopping)
		deadline := time.Now().Add(grace - legsReserve(grace))
		drainAPI(log, rt, servers, deadline)
		if pending != nil {
			flushOutbox(gctx, log, pending, deadline)
		}
		stopLegs()
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
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errGraceExceeded
	}
}

// legsReserve is the part of grace kept for the legs after the API drain:
// a Claude Code leg takes up to 2 s to tell its idle subscribers.
func legsReserve(grace time.Duration) time.Duration {
	return min(grace/4, 3*time.Second)
}

// drainAPI stops the servers accepting and waits until deadline for
// requests in flight; what is still open then is cut.
func drainAPI(log *slog.Logger, rt *router.Router, servers []*http.Server, deadline time.Time) {
	// An event stream never finishes by itself: end it now, with a reason.
	rt.Hub().CloseAll(router.ErrShuttingDown)
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

// reloaders lists what SIGHUP reloads: the log level, and the API's TLS
// certificate when the server serves TLS (api.Server.ReloadTLS).
func (o *lifecycleOpts) reloaders(lv *slog.LevelVar, srv any) []reloader {
	rs := []reloader{o.levelReloader(lv)}
	if c, ok := srv.(interface{ TLSConfig() *tls.Config }); ok && c.TLSConfig() == nil {
		return rs // no TLS: nothing to reload
	}
	if t, ok := srv.(interface{ ReloadTLS() error }); ok {
		rs = append(rs, reloader{what: "TLS certificate", reload: func() (string, error) {
			if err := t.ReloadTLS(); err != nil {
				return "", err
			}
			return "reloaded", nil
		}})
	}
	return rs
}

// flushOutbox waits, with the legs still running, until the outbox holds
// nothing, deadline passes or ctx ends (a leg failed). What it still holds
// then stays stored for the next start.
func flushOutbox(ctx context.Context, log *slog.Logger, pending func() int, deadline time.Time) {
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
