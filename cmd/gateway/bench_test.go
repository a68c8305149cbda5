package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/uds"
)

// sink is a bare peer socket that signals each frame line it reads.
type sink struct {
	path string
	got  chan struct{}
}

func startSink(tb testing.TB, dir string) *sink {
	tb.Helper()
	s := &sink{path: filepath.Join(dir, "sink", "1.sock"), got: make(chan struct{}, 1024)}
	if err := safefile.EnsureDir(filepath.Dir(s.path)); err != nil {
		tb.Fatal(err)
	}
	ln, err := uds.Listen(s.path, uds.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ln.Serve(ctx, func(ctx context.Context, c *uds.Conn) {
			for {
				line, err := c.ReadLine()
				if err != nil {
					return
				}
				if bytes.Contains(line, []byte(`"type":"user"`)) {
					s.got <- struct{}{}
				}
			}
		})
	}()
	tb.Cleanup(func() { cancel(); <-done })
	return s
}

// rawSend is the floor: connect, one write, close.
func rawSend(path string, payload []byte) error {
	c, err := net.Dial("unix", path)
	if err != nil {
		return err
	}
	_, err = c.Write(payload)
	c.Close()
	return err
}

// BenchmarkSendPath runs, in one loop, the raw limit (a bare client doing
// connect + write + close to a sink socket, until the sink has read the
// frame) and the gateway's send path (control API request until the sink
// has read the delivered frame), and reports both latencies and their ratio.
func BenchmarkSendPath(b *testing.B) {
	dir := b.TempDir()
	sk := startSink(b, dir)
	gw := startBinary(b, dir)
	frame := []byte(`{"msgV":1,"msg_id":"00000000-0000-4000-8000-000000000000","type":"user","message":{"role":"user","content":"x"},"priority":"next","from":"uds:/tmp/cc-socks/1.sock"}` + "\n")
	ctx := context.Background()
	var raw, via []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := rawSend(sk.path, frame); err != nil {
			b.Fatal(err)
		}
		<-sk.got
		raw = append(raw, time.Since(t0))

		t0 = time.Now()
		if _, err := gw.Send(ctx, api.SendBody{To: "uds:" + sk.path, Text: fmt.Sprintf("bench %d", i)}); err != nil {
			b.Fatal(err)
		}
		<-sk.got
		via = append(via, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(testutil.Percentile(raw, 0.5).Microseconds()), "raw-p50-µs")
	b.ReportMetric(float64(testutil.Percentile(raw, 0.99).Microseconds()), "raw-p99-µs")
	b.ReportMetric(float64(testutil.Percentile(via, 0.5).Microseconds()), "gw-p50-µs")
	b.ReportMetric(float64(testutil.Percentile(via, 0.99).Microseconds()), "gw-p99-µs")
	b.ReportMetric(float64(testutil.Mean(via))/float64(max(1, testutil.Mean(raw))), "gw/raw")
}
