package federation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
	"github.com/sessiongateway/gateway/testkit/natscluster"
)

// The fault tests: 1,000 messages in flight from four named senders on
// host a to a fake Qwen Code session on host c, while a NATS node, the
// receiving gateway or the sending gateway's link fails, or a third host
// vanishes. Each counts, at the receiving session, every body exactly once
// and each sender's in the order it was sent.
const (
	senders = 4
	each    = 250
	total   = senders * each
)

// sink is a fake Qwen Code session on a host that takes every message as
// it comes (Qwen Code's rate limits lifted, every sender accepted) and
// counts what reached it.
type sink struct {
	mu     sync.Mutex
	copies map[string]int   // body -> how many times it arrived
	order  map[string][]int // sender -> its sequence numbers, as they arrived
	n      int
}

func startSink(t *testing.T, h *host, name string) *sink {
	t.Helper()
	lots := 1 << 20
	// It keeps 4,096 settled ids where Qwen Code keeps 512: a copy the
	// receiving gateway writes again after a crash (written, not yet
	// recorded: at most one per sender) comes back after AckWait, and by
	// then more than 512 others may have reached it (see docs/federation.md,
	// the window left).
	p := h.qwen(t, fakeqwen.Config{Name: name, Inbound: qwen.PolicyAccept, Limits: qwen.Limits{
		Sender: clock.Bucket{Rate: float64(lots), Burst: lots}, Global: clock.Bucket{Rate: float64(lots), Burst: lots},
		MaxQueued: 4096, MaxSettled: 4096,
	}})
	s := &sink{copies: map[string]int{}, order: map[string][]int{}}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case ev := <-p.Events():
				if ev.Type == message.EventMessage && ev.Message != nil {
					s.note(ev.Message.Body)
				}
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
	return s
}

func (s *sink) note(body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.copies[body]++
	s.n++
	var who string
	var seq int
	if _, err := fmt.Sscanf(body, "%s %d", &who, &seq); err == nil {
		s.order[who] = append(s.order[who], seq)
	}
}

// distinct is how many different bodies arrived, and how many in all.
func (s *sink) distinct() (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.copies), s.n
}

// check says what is wrong with what arrived: a body missing or arrived
// twice and, when ordered, a sender's out of order. Order is promised
// across a partition; a crash (of the receiving gateway, or of the NATS
// node leading its consumer) brings the messages it held back after
// AckWait, behind later ones.
func (s *sink) check(t *testing.T, ordered bool) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var lost, dup []string
	for w := range senders {
		for i := range each {
			switch k := s.copies[body(w, i)]; {
			case k == 0:
				lost = append(lost, body(w, i))
			case k > 1:
				dup = append(dup, fmt.Sprintf("%s x%d", body(w, i), k))
			}
		}
	}
	if len(lost)+len(dup) > 0 || s.n != total {
		t.Errorf("at the receiving session: %d arrived, %d distinct of %d; lost %d %v; duplicated %d %v",
			s.n, len(s.copies), total, len(lost), head(lost), len(dup), head(dup))
	}
	for w := range senders {
		if got := s.order[sender(w)]; ordered && !slices.IsSorted(got) {
			t.Errorf("%s's messages arrived out of order: %v", sender(w), got)
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 10)] }

func sender(w int) string  { return fmt.Sprintf("s%d", w) }
func body(w, i int) string { return fmt.Sprintf("%s %04d", sender(w), i) }

// statusOf says whether a send's answer means the gateway took it: sent
// or queued, or already delivered when the receipt came back before the
// answer did.
func statusOf(o string) bool { return o == "sent" || o == "queued" || o == "delivered" }

// send runs the four senders on g, each sending its 250 in order, a pause
// between two of its messages; sent counts what the gateway accepted.
// It returns a wait for them all.
func send(t *testing.T, g *host, to string, pause time.Duration, sent *atomic.Int64) func() {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	var wg sync.WaitGroup
	var queued atomic.Int64
	for w := range senders {
		wg.Go(func() {
			for i := range each {
				o, err := g.G.Send(ctx, api.SendBody{To: to, Body: body(w, i), FromName: sender(w), Unpaced: true})
				if err != nil || !statusOf(o.Status.String()) {
					t.Errorf("send %q: %s, %v", body(w, i), o.Status, err)
					return
				}
				if o.Status == message.StatusQueued {
					queued.Add(1)
				}
				sent.Add(1)
				if pause > 0 {
					time.Sleep(pause)
				}
			}
		})
	}
	return func() {
		wg.Wait()
		cancel()
		t.Logf("%d sends accepted, %d of them kept (queued) rather than stored at once", sent.Load(), queued.Load())
	}
}

// drained waits until every message is at the receiving session and host
// c's consumer holds none unacknowledged, so none can be offered again.
func drained(t *testing.T, c *natscluster.Cluster, s *sink, within time.Duration) {
	t.Helper()
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	start := time.Now()
	var last string
	ok := testutil.Within(within, func() bool {
		if d, _ := s.distinct(); d < total {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		cons, err := js.Consumer(ctx, "GATEWAY_FED", "in-c")
		if err != nil {
			last = err.Error()
			return false
		}
		info, err := cons.Info(ctx)
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("unacknowledged %d, not yet delivered %d, redelivered %d", info.NumAckPending, info.NumPending, info.NumRedelivered)
		return info.NumAckPending == 0 && info.NumPending == 0
	})
	d, n := s.distinct()
	if !ok {
		t.Fatalf("after %v: %d distinct of %d at the receiving session (%d in all); host c's consumer: %s", within, d, total, n, last)
	}
	t.Logf("all %d at the receiving session %v after the fault's start", total, time.Since(start).Round(100*time.Millisecond))
	time.Sleep(time.Second) // a late copy would show now
}

// streamLeader is the node that leads the federation's stream.
func streamLeader(t *testing.T, c *natscluster.Cluster) int {
	t.Helper()
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := testutil.Context(t, 10*time.Second)
	st, err := js.Stream(ctx, "GATEWAY_FED")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatalf("stream info %+v, %v", info, err)
	}
	if len(info.Cluster.Replicas) != 2 {
		t.Fatalf("the stream is not on three nodes: %+v", info.Cluster)
	}
	return c.Index(info.Cluster.Leader)
}

// pair starts hosts a (joined through urlsA) and c with a sink on c, and
// waits until a lists it.
func pair(t *testing.T, c *natscluster.Cluster, urlsA string) (*host, *host, *sink) {
	t.Helper()
	a := startHost(t, "a", urlsA)
	hc := startHost(t, "c", c.URL(1)+","+c.URL(2)+","+c.URL(0))
	s := startSink(t, hc, "sink")
	a.waitListed(t, "sink.c")
	return a, hc, s
}

func TestAThousandMessagesSurviveTheStreamLeaderKilled(t *testing.T) {
	c := cluster(t)
	a, _, s := pair(t, c, c.URLs())
	var sent atomic.Int64
	wait := send(t, a, "sink.c", 0, &sent)
	testutil.EventuallyWithin(t, 60*time.Second, "a third sent", func() bool { return sent.Load() >= total/3 })
	leader := streamLeader(t, c)
	t.Logf("killing %s, the stream's leader, after %d sends", c.Name(leader), sent.Load())
	c.Kill(leader)
	wait()
	drained(t, c, s, 90*time.Second)
	s.check(t, false)
}

func TestAThousandMessagesSurviveTheReceivingGatewayKilledAndRestarted(t *testing.T) {
	c := cluster(t)
	a, hc, s := pair(t, c, c.URLs())
	var sent atomic.Int64
	// Paced, so the senders are still sending while c restarts.
	wait := send(t, a, "sink.c", 10*time.Millisecond, &sent)
	testutil.EventuallyWithin(t, 60*time.Second, "a third delivered", func() bool { d, _ := s.distinct(); return d >= total/3 })
	d, _ := s.distinct()
	t.Logf("killing host c's gateway with SIGKILL after %d delivered, %d sent", d, sent.Load())
	hc.kill(t)
	hc.restart(t)
	wait()
	drained(t, c, s, 90*time.Second)
	s.check(t, false)
}

func TestSendsWhileAGatewayIsCutOffForThirtySecondsAllArriveInOrderAfterTheHeal(t *testing.T) {
	c := cluster(t)
	p := natscluster.NewProxy(t, c.URLs())
	a, _, s := pair(t, c, p.URLs())
	var sent atomic.Int64
	// 250 each at one per 200 ms: the senders keep sending through the
	// cut and past the heal, while what was kept drains, so a send made
	// then must not overtake the kept ones.
	wait := send(t, a, "sink.c", 200*time.Millisecond, &sent)
	testutil.EventuallyWithin(t, 30*time.Second, "some delivered", func() bool { d, _ := s.distinct(); return d >= 100 })
	p.Cut()
	cutAt := time.Now()
	sentAtCut := sent.Load()
	d, _ := s.distinct()
	t.Logf("host a cut off after %d sent, %d delivered", sentAtCut, d)
	// Past the roster TTL (20 s) host a, cut off, lists c's session as
	// unreachable rather than forgetting it.
	time.Sleep(25 * time.Second)
	ctx := testutil.Context(t, 10*time.Second)
	ss, err := a.G.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sk, ok := findSession(ss, "sink.c"); !ok || sk.Reachable {
		t.Errorf("cut off past the TTL, host a lists sink.c as %+v (listed %v)", sk, ok)
	}
	// What crosses during the cut was stored before it: the sends counted
	// by then, and at most one more per sender (stored, its answer not
	// back yet). Anything beyond went through the cut.
	if d2, _ := s.distinct(); d2 > max(d, int(sentAtCut)+senders) {
		t.Errorf("%d delivered while host a was cut off, beyond the %d sent (and up to %d in flight) before it", d2-d, sentAtCut, senders)
	}
	time.Sleep(30*time.Second - time.Since(cutAt))
	t.Logf("healed after %v; %d sent", time.Since(cutAt).Round(time.Second), sent.Load())
	atHeal := sent.Load()
	p.Heal()
	wait()
	if atHeal >= total {
		t.Errorf("every send was made before the heal: nothing checks the ones made while the kept ones drain")
	}
	drained(t, c, s, 90*time.Second)
	s.check(t, true)
}

func TestAHostThatVanishesLeavesTheOtherRostersWithinTheTTL(t *testing.T) {
	c := cluster(t)
	a, hc, s := pair(t, c, c.URLs())
	b := startHost(t, "b", c.URL(2)+","+c.URL(0))
	b.qwen(t, fakeqwen.Config{Name: "bee"})
	a.waitListed(t, "bee.b")
	hc.waitListed(t, "bee.b")
	var sent atomic.Int64
	wait := send(t, a, "sink.c", 0, &sent)
	testutil.EventuallyWithin(t, 60*time.Second, "a third sent", func() bool { return sent.Load() >= total/3 })
	b.kill(t)
	gone := time.Now()
	const ttl = 30 * time.Second // README.md's bound; the default roster TTL is 20 s
	for _, h := range []*host{a, hc} {
		testutil.EventuallyWithin(t, ttl-time.Since(gone), "host b leaves "+h.Name+"'s roster", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			ss, err := h.G.Sessions(ctx)
			if err != nil {
				return false
			}
			_, ok := findSession(ss, "bee.b")
			return !ok
		})
	}
	t.Logf("host b, killed, left both rosters after %v", time.Since(gone).Round(100*time.Millisecond))
	wait()
	drained(t, c, s, 90*time.Second)
	s.check(t, true)
}

func findSession(ss []message.Session, name string) (message.Session, bool) {
	for _, s := range ss {
		if strings.EqualFold(s.Name, name) {
			return s, true
		}
	}
	return message.Session{}, false
}
