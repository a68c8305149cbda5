package federation

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// BenchmarkCrossHost measures one message from host A's leg to host C's
// Deliver over the three-node cluster, one at a time; p50 and p99 are
// reported with the mean.
func BenchmarkCrossHost(b *testing.B) {
	c, err := startCluster(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer c.shutdown()
	ctx := context.Background()
	connect := func(url, host string) *Node {
		n, err := Connect(ctx, Config{URLs: url, Host: host, RosterTTL: testTTL, AckWait: 2 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { n.Close() })
		return n
	}
	a, cc := connect(c.url(0), "bench-a"), connect(c.url(2), "bench-c")
	got := make(chan time.Time, 1)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = cc.Serve(sctx, Local{
			Sessions: func(context.Context) ([]message.Session, error) {
				return []message.Session{session("sink", "s-sink", message.ProtocolClaude)}, nil
			},
			Deliver: func(_ context.Context, m message.Message) (message.Receipt, error) {
				got <- time.Now()
				return message.Receipt{MsgID: m.ID, Status: message.StatusDelivered}, nil
			},
		})
	}()
	if !testutil.Within(10*time.Second, func() bool { _, ok := a.Origin("sink@bench-c", ""); return ok }) {
		b.Fatal("no roster")
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if _, err := a.Leg().Send(ctx, message.Message{ID: fmt.Sprintf("bench-%d-%d", b.N, i), To: "sink@bench-c", Body: "x"}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-got).Sub(start))
	}
	b.StopTimer()
	b.ReportMetric(float64(testutil.Percentile(lat, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(testutil.Percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkCrossHostCost sends b.N messages from 16 senders on host A to
// a Deliver on host C that answers delivered at once, each until its
// receipt is back at A, and reports what a message costs the cluster
// and this process: messages the three NATS nodes took in (clients'
// publishes and acknowledgements, and the routes' replication) and of
// those the routed ones, and CPU (both hosts and the three nodes, all in
// this process) per message.
func BenchmarkCrossHostCost(b *testing.B) {
	c, err := startCluster(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer c.shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	connect := func(url, host string) *Node {
		n, err := Connect(ctx, Config{URLs: url, Host: host, RosterTTL: testTTL, AckWait: 10 * time.Second, StateDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { n.Close() })
		return n
	}
	a, cc := connect(c.url(0), "cost-a"), connect(c.url(2), "cost-c")
	go func() {
		_ = cc.Serve(ctx, Local{
			Sessions: func(context.Context) ([]message.Session, error) {
				return []message.Session{session("sink", "s-sink", message.ProtocolClaude)}, nil
			},
			Deliver: func(_ context.Context, m message.Message) (message.Receipt, error) {
				return message.Receipt{MsgID: m.ID, Status: message.StatusDelivered}, nil
			},
		})
	}()
	in := make(chan message.Event, 1024)
	go func() { _ = a.Leg().Run(ctx, in) }()
	if !testutil.Within(10*time.Second, func() bool { _, ok := a.Origin("sink@cost-c", ""); return ok }) {
		b.Fatal("no roster")
	}
	const senders = 16
	per := max(1, b.N/senders)
	n := senders * per
	tookIn := func() (all, routed int64) {
		for _, s := range c.servers {
			if v, err := s.Varz(nil); err == nil {
				all += v.InMsgs
			}
			if rz, err := s.Routez(nil); err == nil {
				for _, r := range rz.Routes {
					routed += r.InMsgs
				}
			}
		}
		return all, routed
	}
	all0, routed0 := tookIn()
	cpu0 := cpuTime()
	b.ResetTimer()
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range per {
				m := message.Message{ID: fmt.Sprintf("cost-%d-%d-%d", b.N, s, i), FromName: fmt.Sprint("s", s), To: "sink@cost-c", Body: "x"}
				if rc, err := a.Leg().Send(ctx, m); err != nil || rc.Status != message.StatusSent {
					b.Errorf("send: %+v, %v", rc, err)
					return
				}
			}
		})
	}
	back := 0
	timeout := time.After(time.Minute)
	for back < n {
		select {
		case ev := <-in:
			if ev.Receipt != nil && ev.Receipt.Status == message.StatusDelivered {
				back++
			}
		case <-timeout:
			b.Fatalf("%d of %d receipts back", back, n)
		}
	}
	wg.Wait()
	b.StopTimer()
	cpu := cpuTime() - cpu0
	time.Sleep(200 * time.Millisecond) // the last acknowledgements
	all1, routed1 := tookIn()
	b.ReportMetric(float64(all1-all0)/float64(n), "nats-msgs/msg")
	b.ReportMetric(float64(routed1-routed0)/float64(n), "routed-msgs/msg")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/msg")
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msg/s")
}

// cpuTime is the CPU this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
