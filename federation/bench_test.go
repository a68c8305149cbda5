package federation

import (
	"context"
	"fmt"
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
