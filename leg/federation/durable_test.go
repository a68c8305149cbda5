package federation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/natscluster"
)

func TestSettledIdsSurviveAReopenAndTheOldestArePruned(t *testing.T) {
	dir := t.TempDir()
	db, err := openStore(dir, SettledFile, true)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSettled(db, 128, clock.Real{})
	if err != nil {
		t.Fatal(err)
	}
	sent := message.Receipt{MsgID: "m-0", Status: message.StatusSent}
	delivered := message.Receipt{MsgID: "m-0", Status: message.StatusDelivered}
	if err := s.put("a/m-0", delivered); err != nil {
		t.Fatal(err)
	}
	// A decisive record is never replaced by a taken one.
	if err := s.put("a/m-0", sent); err != nil {
		t.Fatal(err)
	}
	// In groups of ten at once: commits shared with others, on disk all
	// the same, in the order of their keys' groups.
	for g := 1; g < 300; g += 10 {
		var wg sync.WaitGroup
		for i := g; i < min(g+10, 300); i++ {
			wg.Go(func() {
				if err := s.put(fmt.Sprintf("a/m-%d", i), message.Receipt{Status: message.StatusSent}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	db.Close()
	db, err = openStore(dir, SettledFile, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err = newSettled(db, 128, clock.Real{})
	if err != nil {
		t.Fatal(err)
	}
	if s.count > 128 {
		t.Fatalf("%d records kept, cap 128", s.count)
	}
	if _, ok := s.get("a/m-0"); ok {
		t.Fatal("the oldest record was not pruned")
	}
	for _, k := range []string{"a/m-298", "a/m-299"} {
		if rc, ok := s.get(k); !ok || rc.Status != message.StatusSent {
			t.Fatalf("%s after a reopen: %+v, %v", k, rc, ok)
		}
	}

	// Before pruning, the decisive record stood.
	s2, _ := newSettled(nil, 8, clock.Real{})
	_ = s2.put("k", delivered)
	_ = s2.put("k", sent)
	if rc, _ := s2.get("k"); rc.Status != message.StatusDelivered {
		t.Fatalf("memory store replaced delivered by %v", rc.Status)
	}
}

// pending is how many messages host's inbound consumer has handed out and
// not had acknowledged.
func pending(t *testing.T, n *Node) int {
	t.Helper()
	ctx := testutil.Context(t, 5*time.Second)
	c, err := n.stream.Consumer(ctx, "in-"+n.Host())
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.NumAckPending + int(info.NumPending)
}

func TestAMessageIsAcknowledgedOnlyAfterItsOutcomeAndNeverWrittenTwiceAcrossACrash(t *testing.T) {
	c := sharedCluster(t)
	dir := t.TempDir()
	stateful := func(cfg *Config) { cfg.StateDir, cfg.Instance = dir, "dur-c-1" }
	id1, id2 := "dur-1-"+randomID(), "dur-2-"+randomID() // the stream's de-duplication outlives a test run
	a := join(t, c.url(0), "dur-a")
	cc := join(t, c.url(1), "dur-c", stateful)
	sink := []message.Session{session("sink", "s-sink", message.ProtocolQwen)}
	// The local leg takes each message (sent) and says nothing more, as a
	// receiver that is slow to answer.
	pc := &peer{sessions: sink, status: message.StatusSent}
	serve(t, a, &peer{})
	serve(t, cc, pc)
	receipts := run(t, a)
	ctx := testutil.Context(t, 60*time.Second)
	testutil.Eventually(t, "a lists sink@dur-c", func() bool { _, ok := a.Origin("sink@dur-c", ""); return ok })

	if rc, err := a.Leg().Send(ctx, message.Message{ID: id1, To: "sink@dur-c", Body: "one"}); err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send: %+v, %v", rc, err)
	}
	testutil.Eventually(t, "c writes it", func() bool { return len(pc.received()) == 1 })
	// Taken but no outcome: held unacknowledged, kept in progress past
	// AckWait (2 s here) rather than offered again.
	time.Sleep(3 * time.Second)
	if got := len(pc.received()); got != 1 || pending(t, cc) != 1 {
		t.Fatalf("written %d times, %d pending, before its outcome", got, pending(t, cc))
	}

	// Killed before the outcome: the restarted gateway is offered it again
	// and answers from its settled store instead of writing it twice.
	crash(cc)
	if rc, err := a.Leg().Send(ctx, message.Message{ID: id2, To: "sink@dur-c", Body: "two"}); err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send while c is down: %+v, %v", rc, err)
	}
	cc2 := join(t, c.url(2), "dur-c", stateful)
	pc2 := &peer{sessions: sink}
	serve(t, cc2, pc2)
	testutil.EventuallyWithin(t, 20*time.Second, "the restarted c delivers the one it had not seen", func() bool { return len(pc2.received()) == 1 })
	testutil.EventuallyWithin(t, 20*time.Second, "and acknowledges the one it had", func() bool { return pending(t, cc2) == 0 })
	if got := pc2.received(); len(got) != 1 || got[0].ID != id2 {
		t.Fatalf("after the restart c delivered %+v", got)
	}

	// What c said of each travels back: the second delivered, the first
	// nothing more than the sent its publish got.
	testutil.EventuallyWithin(t, 10*time.Second, "dur-2's receipt", func() bool {
		for {
			select {
			case ev := <-receipts:
				if ev.Receipt.MsgID != id2 || ev.Receipt.Status != message.StatusDelivered {
					t.Fatalf("receipt %+v", ev.Receipt)
				}
				return true
			default:
				return false
			}
		}
	})
}

func TestSendsWhileCutOffAreKeptAndPublishedInOrderPerSenderAfterTheHeal(t *testing.T) {
	a, _, pc, p := proxied(t, "cut", []func(*Config){func(cfg *Config) { cfg.StateDir = t.TempDir() }}, nil)
	receipts := run(t, a)
	ctx := testutil.Context(t, 60*time.Second)
	cutOff(t, p, a)
	const senders, each = 3, 20
	run := randomID()
	var order []string
	for i := range each {
		for s := range senders {
			id := fmt.Sprintf("cut-%d-%02d-%s", s, i, run)
			order = append(order, id)
			rc, err := a.Leg().Send(ctx, message.Message{ID: id, To: "sink@cut-c", FromName: fmt.Sprintf("s%d", s), Body: id})
			if err != nil || rc.Status != message.StatusQueued {
				t.Fatalf("send %s while cut off: %+v, %v", id, rc, err)
			}
		}
		if i == 0 {
			// Past the TTL the other host's session is listed unreachable,
			// and a send to it is still kept.
			time.Sleep(testTTL + time.Second)
			ss := filterHosts(a.Sessions(), "cut-")
			if len(ss) != 1 || ss[0].Reachable {
				t.Fatalf("while cut off past the TTL a lists %+v", ss)
			}
		}
	}
	if len(pc.received()) != 0 {
		t.Fatal("delivered while cut off")
	}
	p.Heal()
	// Counted from the heal, with room for a loaded machine: each kept
	// send is one replicated publish, one after another (CI at load 10
	// published 17 in the 55 s a shared deadline left).
	hctx := testutil.Context(t, 120*time.Second)
	sent := map[string]int{}
	for len(sent) < senders*each {
		select {
		case ev := <-receipts:
			if ev.Receipt.Status == message.StatusSent {
				sent[ev.Receipt.MsgID]++
			}
		case <-hctx.Done():
			t.Fatalf("%d sent receipts after the heal (still kept %d, link %v, delivered %d)", len(sent), a.spool.len(), a.nc.Status(), len(pc.received()))
		}
	}
	testutil.EventuallyWithin(t, 20*time.Second, "every kept send delivered", func() bool { return len(pc.received()) >= senders*each })
	time.Sleep(time.Second)
	// Each sender's in the order sent (senders' lanes run side by side).
	bySender := func(ids []string) map[string][]string {
		m := map[string][]string{}
		for _, id := range ids {
			m[id[:len("cut-0")]] = append(m[id[:len("cut-0")]], id)
		}
		return m
	}
	var got []string
	for _, m := range pc.received() {
		got = append(got, m.ID)
	}
	if len(got) != len(order) || !maps.EqualFunc(bySender(got), bySender(order), slices.Equal) {
		t.Fatalf("delivered %d in this order:\n%v\nsent\n%v", len(got), got, order)
	}
	testutil.Eventually(t, "sink@cut-c is reachable again", func() bool {
		ss := filterHosts(a.Sessions(), "cut-")
		return len(ss) == 1 && ss[0].Reachable
	})
}

func TestAKeptSendPublishedBeforeRunStartsIsReportedSentOnceItDoes(t *testing.T) {
	a, _, _, p := proxied(t, "early", nil, nil)
	ctx := testutil.Context(t, 60*time.Second)
	cutOff(t, p, a)
	id := "early-" + randomID()
	if rc, err := a.Leg().Send(ctx, message.Message{ID: id, To: "sink@early-c", Body: "b"}); err != nil || rc.Status != message.StatusQueued {
		t.Fatalf("send while cut off: %+v, %v", rc, err)
	}
	p.Heal()
	testutil.EventuallyWithin(t, 30*time.Second, "the kept send published", func() bool { return a.spool.len() == 0 })

	receipts := run(t, a)
	for {
		select {
		case ev := <-receipts:
			if ev.Receipt.MsgID == id && ev.Receipt.Status == message.StatusSent {
				return
			}
		case <-ctx.Done():
			t.Fatal("no sent receipt for the send kept and published before Run")
		}
	}
}

func TestAFullSpoolRefusesWithItsReasonAndWhatItKeptSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	stateful := func(cfg *Config) { cfg.StateDir, cfg.Instance, cfg.SpoolPerHost = dir, "full-a-1", 4 }
	run := randomID()
	ids := make([]string, 5)
	for i := range ids {
		ids[i] = fmt.Sprintf("full-%d-%s", i, run)
	}
	a, _, pc, p := proxied(t, "full", []func(*Config){stateful}, nil)
	ctx := testutil.Context(t, 60*time.Second)
	cutOff(t, p, a)
	for i := range 4 {
		if rc, err := a.Leg().Send(ctx, message.Message{ID: ids[i], To: "sink@full-c", Body: "b"}); err != nil || rc.Status != message.StatusQueued {
			t.Fatalf("send %d: %+v, %v", i, rc, err)
		}
	}
	rc, err := a.Leg().Send(ctx, message.Message{ID: ids[4], To: "sink@full-c", Body: "b"})
	var full *SpoolFullError
	if !errors.As(err, &full) || !errors.Is(err, message.ErrNotAccepted) || full.Scope != "host" || full.Max != 4 || rc.Status != message.StatusFailed {
		t.Fatalf("fifth send: %+v, %v", rc, err)
	}

	// Killed while cut off: the next start publishes what was kept.
	crash(a)
	a2 := join(t, sharedCluster(t).url(2), "full-a", stateful)
	serve(t, a2, &peer{})
	testutil.EventuallyWithin(t, 20*time.Second, "the kept sends delivered", func() bool { return len(pc.received()) == 4 })
	var got []string
	for _, m := range pc.received() {
		got = append(got, m.ID)
	}
	if !slices.Equal(got, ids[:4]) {
		t.Fatalf("delivered %v", got)
	}
	testutil.Eventually(t, "the spool empties", func() bool { return a2.spool.len() == 0 })
}

// Kept sends published as the link comes back, cut again mid-flush for
// longer than the receivers' replay window, all arrive, each once: a
// send is never reported sent when the copy the stream stored is too old
// for its receiver to take.
func TestKeptSendsCutOffAgainMidFlushForLongerThanTheReplayWindowAllArrive(t *testing.T) {
	const window = 3 * time.Second
	short := func(cfg *Config) { cfg.ReplayWindow = window }
	a, cc, pc, p := proxied(t, "mid", []func(*Config){short, func(cfg *Config) { cfg.StateDir = t.TempDir() }}, []func(*Config){short})
	receipts := run(t, a)
	ctx := testutil.Context(t, 30*time.Second)
	cutOff(t, p, a)
	const count = 400
	run := randomID()
	for i := range count {
		id := fmt.Sprintf("mid-%03d-%s", i, run)
		if rc, err := a.Leg().Send(ctx, message.Message{ID: id, To: "sink@mid-c", FromName: "w", Body: id}); err != nil || rc.Status != message.StatusQueued {
			t.Fatalf("send %s while cut off: %+v, %v", id, rc, err)
		}
	}
	sent := map[string]bool{}
	await := func(hctx context.Context, n int) {
		t.Helper()
		for len(sent) < n {
			select {
			case ev := <-receipts:
				if ev.Receipt.Status == message.StatusSent {
					sent[ev.Receipt.MsgID] = true
				} else if ev.Receipt.Status == message.StatusFailed {
					t.Fatalf("kept send failed: %+v", *ev.Receipt)
				}
			case <-hctx.Done():
				t.Fatalf("%d sent (still kept %d, link %v)", len(sent), a.spool.len(), a.nc.Status())
			}
		}
	}
	p.Heal()
	await(testutil.Context(t, 60*time.Second), 5)
	p.Cut() // mid-flush
	time.Sleep(2 * window)
	p.Heal()
	await(testutil.Context(t, 120*time.Second), count)
	if testutil.Within(30*time.Second, func() bool { return len(pc.received()) >= count }) {
		time.Sleep(time.Second) // time for a copy too many to arrive
	}
	got := map[string]int{}
	for _, m := range pc.received() {
		got[m.ID]++
	}
	for id := range sent {
		if got[id] != 1 {
			t.Errorf("%s delivered %d times", id, got[id])
		}
	}
	if len(got) != count {
		t.Errorf("%d delivered, %d sent", len(got), count)
	}
	t.Logf("dropped at the receiver: %v", cc.Dropped())
	if n := cc.Dropped()[ReasonReplayed]; n != 0 {
		t.Errorf("%d copies dropped as replayed", n)
	}
}

// Two copies of one message under different signatures (its sender
// signed it again after a long cut, each stored under its own
// de-duplication id) reach the session once, and neither stays
// unacknowledged.
func TestTwoCopiesOfAMessageSignedApartAreDeliveredOnce(t *testing.T) {
	c := sharedCluster(t)
	tag := randomID()[:6]
	ha, hc := "twice-a-"+tag, "twice-c-"+tag
	a := join(t, c.url(0), ha)
	cc := join(t, c.url(1), hc)
	sink := session("sink", "s-sink", message.ProtocolQwen)
	var mu sync.Mutex
	var got []string
	serve(t, a, &peer{})
	sctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = cc.Serve(sctx, Local{
			Sessions: func(context.Context) ([]message.Session, error) { return []message.Session{sink}, nil },
			Deliver: func(_ context.Context, m message.Message) (message.Receipt, error) {
				mu.Lock()
				got = append(got, m.ID)
				mu.Unlock()
				time.Sleep(300 * time.Millisecond) // the second copy comes while the first is written
				return message.Receipt{MsgID: m.ID, Status: message.StatusDelivered}, nil
			},
		})
	}()
	t.Cleanup(func() { cancel(); <-served })
	ctx := testutil.Context(t, 30*time.Second)
	testutil.Eventually(t, "a lists sink", func() bool { _, ok := a.Origin("sink@"+hc, ""); return ok })
	id := "m-twice-" + randomID()
	for i := range 2 {
		b, err := a.encode(envelope{Kind: kindMessage, From: ha, To: hc, Message: &message.Message{ID: id, To: sink.Address, ToName: sink.Name, ToSessionID: sink.SessionID, Body: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.publish(ctx, inSubject(hc), id+fmt.Sprint(i), func() ([]byte, error) { return b, nil }); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, "both copies acknowledged", func() bool {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		return n >= 1 && pending(t, cc) == 0
	})
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("delivered %d times", len(got))
	}
}

// proxied joins NAME-a through a proxy that can cut it off and NAME-c
// directly, c serving a Qwen session "sink" that a lists before it
// returns.
func proxied(t *testing.T, name string, aMods, cMods []func(*Config)) (a, cc *Node, sink *peer, p *natscluster.Proxy) {
	t.Helper()
	c := sharedCluster(t)
	p = natscluster.NewProxy(t, c.urls(0))
	a = join(t, p.URLs(), name+"-a", aMods...)
	cc = join(t, c.url(1), name+"-c", cMods...)
	sink = &peer{sessions: []message.Session{session("sink", "s-sink", message.ProtocolQwen)}}
	serve(t, a, &peer{})
	serve(t, cc, sink)
	testutil.Eventually(t, "a lists sink@"+name+"-c", func() bool { _, ok := a.Origin("sink@"+name+"-c", ""); return ok })
	return a, cc, sink, p
}

// cutOff cuts a off the cluster through p and waits until a notices.
func cutOff(t *testing.T, p *natscluster.Proxy, a *Node) {
	t.Helper()
	p.Cut()
	testutil.Eventually(t, "a notices the link is down", func() bool { return a.Ready() != nil })
}
