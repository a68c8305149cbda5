package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// startDemoCloud runs `gateway demo-cloud` (the built binary) in a child
// process, so the fake's own memory is not counted in ours, and returns its
// URL, org and token file.
func startDemoCloud(b *testing.B, sessions int) (url, org, tokenFile string) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, gatewaytest.Bin(b), "demo-cloud", "--sessions", fmt.Sprint(sessions), "--state-dir", filepath.Join(b.TempDir(), "demo"))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cancel(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	reURL := regexp.MustCompile(`(http://127\.0\.0\.1:\d+) \(org ([0-9a-f-]+)\)`)
	for sc.Scan() {
		line := sc.Text()
		if m := reURL.FindStringSubmatch(line); m != nil {
			url, org = m[1], m[2]
		}
		if f, ok := strings.CutPrefix(line, "token file: "); ok {
			tokenFile = strings.TrimSpace(f)
		}
		if strings.HasPrefix(line, "try:") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if url == "" || tokenFile == "" {
		b.Fatalf("demo-cloud printed no URL or token file")
	}
	return url, org, tokenFile
}

// BenchmarkRemoteIdleSessions follows 1,000 idle remote sessions with the
// remote leg and reports the heap and goroutines each one costs while
// live. The fake runs in another process.
func BenchmarkRemoteIdleSessions(b *testing.B) {
	const n = 1000
	for _, tr := range []string{"ws", "sse"} {
		b.Run(tr, func(b *testing.B) {
			url, org, tokenFile := startDemoCloud(b, n)
			var perSession, goroutines float64
			for b.Loop() {
				ro := &remoteOpts{url: url, org: org, tokenFile: tokenFile, follow: multi{"all"}, transport: tr}
				if err := ro.check(); err != nil {
					b.Fatal(err)
				}
				leg, err := newRemoteLeg(observability.NewLogger(io.Discard, nil), ro)
				if err != nil {
					b.Fatal(err)
				}
				var before runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				g0 := runtime.NumGoroutine()

				ctx, cancel := context.WithCancel(context.Background())
				in := make(chan message.Event, 4096)
				done := make(chan error, 1)
				go func() { done <- leg.Run(ctx, in) }()
				connected := map[string]bool{}
				deadline := time.After(2 * time.Minute)
				for len(connected) < n {
					select {
					case ev := <-in:
						if ev.Link != nil && ev.Link.State == message.LinkConnected {
							connected[ev.Link.SessionID] = true
						}
					case <-deadline:
						b.Fatalf("only %d of %d sessions connected", len(connected), n)
					}
				}
				var after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&after)
				if f := os.Getenv("GATEWAY_BENCH_HEAP_PROFILE"); f != "" {
					// Where the bytes go, for whoever tunes this next.
					if w, err := os.Create(f); err == nil {
						_ = pprof.WriteHeapProfile(w)
						w.Close()
					}
				}
				perSession = float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / n
				goroutines = float64(runtime.NumGoroutine()-g0) / n
				cancel()
				for {
					select {
					case <-in:
						continue
					case err := <-done:
						if err != nil {
							b.Fatal(err)
						}
					}
					break
				}
			}
			b.ReportMetric(perSession, "heap-B/session")
			b.ReportMetric(goroutines, "goroutines/session")
		})
	}
}
