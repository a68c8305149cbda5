package federation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
)

// benchSink is a Claude session with no admission limits that notes when
// each frame arrived, keyed by its body.
type benchSink struct {
	mu      sync.Mutex
	waiting map[string]chan time.Time
}

func newBenchSink(tb testing.TB, configDir, runtime, name string) *benchSink {
	s := &benchSink{waiting: map[string]chan time.Time{}}
	unlimited := claude.Limits{Sender: clock.Bucket{Rate: 1 << 30, Burst: 1 << 30}, Global: clock.Bucket{Rate: 1 << 30, Burst: 1 << 30},
		DedupWindow: time.Nanosecond, MaxQueued: 1 << 30, MaxHeld: 1 << 30, MaxHeldBytes: 1 << 30}
	fakeclaude.Start(tb, fakeclaude.Config{Name: name, ConfigDir: configDir, RuntimeDir: runtime, Mode: message.ModePrompting,
		// Sixteen senders write through one gateway process at once, and
		// its roster probes the sink too: past the default eight (and eight
		// waiting) per process the listener would close a write unread.
		Listen: uds.Limits{MaxConnsPerPeer: 64},
		Limits: unlimited, OnReceived: func(r fakeclaude.Received) {
			now := time.Now()
			s.mu.Lock()
			ch := s.waiting[strings.TrimSpace(r.Content.Envelope.Body)]
			s.mu.Unlock()
			if ch != nil {
				ch <- now
			}
		}})
	return s
}

// expect registers body before it is sent; the channel gets its arrival.
func (s *benchSink) expect(body string) chan time.Time {
	ch := make(chan time.Time, 1)
	s.mu.Lock()
	s.waiting[body] = ch
	s.mu.Unlock()
	return ch
}

func (s *benchSink) done(body string) {
	s.mu.Lock()
	delete(s.waiting, body)
	s.mu.Unlock()
}

// sendOne sends body to to through g's API and returns the time until the
// sink read the frame.
func sendOne(ctx context.Context, g *api.Client, s *benchSink, to, body string) (time.Duration, error) {
	ch := s.expect(body)
	defer s.done(body)
	t0 := time.Now()
	out, err := g.Send(ctx, api.SendBody{To: to, Body: body})
	if err != nil {
		return 0, err
	}
	if out.Status != message.StatusSent {
		return 0, fmt.Errorf("send to %s: %s (%s)", to, out.Status, out.Receipts)
	}
	select {
	case at := <-ch:
		return at.Sub(t0), nil
	case <-time.After(10 * time.Second):
		o, _ := g.Message(ctx, out.Message.ID)
		return 0, fmt.Errorf("%s never reached %s: %s %+v", body, to, o.Status, o.Receipts)
	}
}

// BenchmarkFederatedSend compares, in one run, a message from host A's
// control API to a sink session on host C (over the three-node cluster:
// stream, C's consumer, C's bridge and Claude leg) with the same send to a
// sink session on A itself; the time is until the sink has read the
// frame. "sequential" sends one at a time, "16-senders" from 16 clients at
// once, each waiting for its message to arrive before the next. Each
// reports p50/p99 and msg/s for both roads.
func BenchmarkFederatedSend(b *testing.B) {
	nc := cluster(b)
	// At the default log level, as deployed: the harness's debug level
	// writes a line per message on each host.
	a := startHost(b, "ba", nc.URLs(), "--log-level", "info")
	c := startHost(b, "bc", nc.URL(2)+","+nc.URL(0), "--log-level", "info")
	near := newBenchSink(b, a.W.ConfigDir, a.W.Runtime, "near")
	far := newBenchSink(b, c.W.ConfigDir, c.W.Runtime, "far")
	ctx := context.Background()
	testutil.EventuallyWithin(b, 30*time.Second, "a lists far.bc", func() bool {
		ss, _ := a.G.Sessions(ctx)
		for _, s := range ss {
			if s.Name == "far.bc" {
				return true
			}
		}
		return false
	})
	roads := []struct {
		name string
		to   string
		sink *benchSink
	}{{"local", "near", near}, {"fed", "far.bc", far}}
	// Warm both roads (alias workers, connections) before measuring.
	for _, r := range roads {
		for i := range 20 {
			if _, err := sendOne(ctx, a.G.Client, r.sink, r.to, fmt.Sprintf("warm-%d", i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	run := func(b *testing.B, senders int) {
		for _, r := range roads {
			per := max(1, b.N/senders)
			lat := make([][]time.Duration, senders)
			var wg sync.WaitGroup
			errs := make(chan error, senders)
			start := time.Now()
			for s := range senders {
				wg.Go(func() {
					for i := range per {
						d, err := sendOne(ctx, a.G.Client, r.sink, r.to, fmt.Sprintf("%s-%d-%d-%d-%d", b.Name(), b.N, senders, s, i))
						if err != nil {
							errs <- err
							return
						}
						lat[s] = append(lat[s], d)
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			b.ReportMetric(float64(testutil.Percentile(all, 0.50).Microseconds()), r.name+"-p50-µs")
			b.ReportMetric(float64(testutil.Percentile(all, 0.99).Microseconds()), r.name+"-p99-µs")
			b.ReportMetric(float64(len(all))/elapsed.Seconds(), r.name+"-msg/s")
		}
	}
	b.Run("sequential", func(b *testing.B) { run(b, 1) })
	b.Run("16-senders", func(b *testing.B) { run(b, 16) })
}
