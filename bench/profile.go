package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// profileSpan is how long each profile records.
const profileSpan = 8 * time.Second

// freeLoopback is a loopback address with a port free a moment ago, for
// the gateway's debug server.
func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Profile does nothing without -profile. With it, it runs load over and
// over while the gateway records a CPU profile and an allocation profile
// (what was allocated meanwhile) through its debug server, and writes
// them as DIR/<suite>-<name>.cpu.pprof and .allocs.pprof. Call it after
// the figures are measured: profiling slows the gateway down.
func (e *Env) Profile(ctx context.Context, g *Gateway, name string, load func() error) error {
	if e.ProfileDir == "" {
		return nil
	}
	if g.debugAddr == "" {
		return fmt.Errorf("profile %s: the gateway has no debug address", name)
	}
	if err := os.MkdirAll(e.ProfileDir, 0o700); err != nil {
		return err
	}
	span := profileSpan
	if e.Short {
		span = time.Second
	}
	secs := int(span / time.Second)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	done := make(chan struct{})
	for i, kind := range []string{"cpu", "allocs"} {
		path := "/debug/pprof/profile"
		if kind == "allocs" {
			path = "/debug/pprof/allocs"
		}
		out := filepath.Join(e.ProfileDir, fmt.Sprintf("%s-%s.%s.pprof", e.suite, name, kind))
		wg.Go(func() {
			errs[i] = fetch(ctx, fmt.Sprintf("http://%s%s?seconds=%d", g.debugAddr, path, secs), out)
		})
	}
	// Where the goroutines wait, halfway through: what a CPU profile of
	// a path that is not CPU-bound does not show.
	wg.Go(func() {
		select {
		case <-time.After(span / 2):
		case <-ctx.Done():
			return
		}
		out := filepath.Join(e.ProfileDir, fmt.Sprintf("%s-%s.goroutines.txt", e.suite, name))
		if err := fetch(ctx, fmt.Sprintf("http://%s/debug/pprof/goroutine?debug=1", g.debugAddr), out); err != nil {
			fmt.Fprintf(os.Stderr, "bench: goroutines of %s: %v\n", name, err)
		}
	})
	go func() { wg.Wait(); close(done) }()
	for {
		if err := load(); err != nil {
			<-done
			return err
		}
		select {
		case <-done:
			for _, err := range errs {
				if err != nil {
					return fmt.Errorf("profile %s: %w", name, err)
				}
			}
			fmt.Fprintf(os.Stderr, "bench: profiles of %s-%s in %s\n", e.suite, name, e.ProfileDir)
			return nil
		default:
		}
	}
}

func fetch(ctx context.Context, url, out string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
