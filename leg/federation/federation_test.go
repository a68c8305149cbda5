package federation

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

func addresses(ss []message.Session) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Address)
	}
	slices.Sort(out)
	return out
}

func TestRosterSpansHostsAndForgetsAVanishedOne(t *testing.T) {
	c := sharedCluster(t)
	a := join(t, c.url(0), "ros-a")
	b := join(t, c.url(1), "ros-b")
	cc := join(t, c.url(2), "ros-c")
	serve(t, a, &peer{sessions: []message.Session{session("lead", "s-a", message.ProtocolClaude)}})
	serve(t, b, &peer{sessions: []message.Session{session("work", "s-b", message.ProtocolQwen),
		{Name: "alias", AliasOf: "uds:/x.sock", Address: "uds:/y.sock", SessionID: "s-alias"}}})
	serve(t, cc, &peer{sessions: []message.Session{session("build", "s-c", message.ProtocolClaude)}})

	want := []string{"build@ros-c", "work@ros-b"}
	testutil.Eventually(t, "a lists b's and c's sessions", func() bool {
		return slices.Equal(addresses(filterHosts(a.Sessions(), "ros-")), want)
	})
	for _, s := range a.Sessions() {
		if s.Protocol != message.ProtocolFederation || s.PID != 0 || s.Host == "" || !strings.HasSuffix(s.Address, "@"+s.Host) || !strings.HasSuffix(s.Name, "."+s.Host) {
			t.Errorf("listed %+v", s)
		}
	}
	o, ok := a.Origin("work@ros-b", "s-b")
	if !ok || o.Protocol != message.ProtocolQwen || o.Address != "uds:/run/s-b.sock" || o.Host != "ros-b" {
		t.Fatalf("origin of work@ros-b = %+v, %v", o, ok)
	}

	crash(cc)
	start := time.Now()
	testutil.EventuallyWithin(t, 3*testTTL, "c leaves a's roster", func() bool {
		return slices.Equal(addresses(filterHosts(a.Sessions(), "ros-")), []string{"work@ros-b"})
	})
	t.Logf("a vanished host left the roster after %v (ttl %v)", time.Since(start).Round(time.Millisecond), testTTL)

	b.Close() // a clean leave is seen at once
	testutil.EventuallyWithin(t, testTTL, "b leaves a's roster", func() bool {
		return len(filterHosts(a.Sessions(), "ros-")) == 0
	})
}

func filterHosts(ss []message.Session, prefix string) []message.Session {
	var out []message.Session
	for _, s := range ss {
		if strings.HasPrefix(s.Host, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func TestAMessageCrossesHostsByNameAndItsReceiptsComeBack(t *testing.T) {
	c := sharedCluster(t)
	a := join(t, c.url(0), "msg-a")
	cc := join(t, c.url(2), "msg-c")
	pa, pc := &peer{}, &peer{sessions: []message.Session{session("qwen-work", "s-q", message.ProtocolQwen)}, status: message.StatusHeld}
	serve(t, a, pa)
	serve(t, cc, pc)
	receipts := run(t, a)
	ctx := testutil.Context(t, 20*time.Second)

	testutil.Eventually(t, "a lists qwen-work@msg-c", func() bool {
		_, ok := a.Origin("qwen-work@msg-c", "s-q")
		return ok
	})
	m := message.Message{ID: "m-cross-" + randomID(), To: "qwen-work@msg-c", ToSessionID: "s-q", FromName: "alice", Body: "hello", Time: time.Now()}
	rc, err := a.Leg().Send(ctx, m)
	if err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send = %+v, %v", rc, err)
	}
	testutil.Eventually(t, "c delivers it", func() bool { return len(pc.received()) == 1 })
	got := pc.received()[0]
	if got.To != "uds:/run/s-q.sock" || got.ToSessionID != "s-q" || got.Protocol != message.ProtocolQwen ||
		got.From != "alice@msg-a" || got.FromName != "alice.msg-a" || got.Body != "hello" || got.ID != m.ID {
		t.Fatalf("c got %+v", got)
	}
	// A receipt for it from a host it never went to is dropped and counted.
	spoof, err := testSigner(t).envelope(envelope{Kind: kindReceipt, From: "msg-evil", To: "msg-a", Receipt: &message.Receipt{MsgID: m.ID, Status: message.StatusDenied}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cc.js.Publish(ctx, receiptSubject("msg-a"), spoof); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the spoofed receipt counted", func() bool { return a.Dropped()[ReasonUntrusted] == 1 })
	// A later receipt from the receiving leg travels back too.
	if !cc.Relay(ctx, message.Receipt{MsgID: m.ID, Status: message.StatusDelivered}) {
		t.Fatal("relay did not know the message came from another host")
	}
	if cc.Relay(ctx, message.Receipt{MsgID: "local-only", Status: message.StatusDelivered}) {
		t.Fatal("relay claimed a message that never crossed")
	}
	var statuses []message.Status
	for len(statuses) < 2 {
		select {
		case ev := <-receipts:
			if ev.Type != message.EventReceipt || ev.Leg != message.ProtocolFederation || ev.Receipt.MsgID != m.ID {
				t.Fatalf("event %+v", ev)
			}
			statuses = append(statuses, ev.Receipt.Status)
		case <-ctx.Done():
			t.Fatalf("receipts so far %v", statuses)
		}
	}
	if !slices.Equal(statuses, []message.Status{message.StatusHeld, message.StatusDelivered}) {
		t.Fatalf("receipts %v", statuses)
	}

	// A send over the cap fails at once, with the reason.
	rc, err = a.Leg().Send(ctx, message.Message{ID: "m-huge", To: "qwen-work@msg-c", Body: strings.Repeat("x", MaxEnvelope)})
	if err == nil || rc.Status != message.StatusFailed || !strings.Contains(rc.Reason, "cap") {
		t.Fatalf("huge send = %+v, %v", rc, err)
	}
	// An unknown target fails at once, with a reason.
	rc, err = a.Leg().Send(ctx, message.Message{ID: "m-cross-2", To: "nobody@msg-c"})
	if err == nil || rc.Status != message.StatusFailed {
		t.Fatalf("send to nobody = %+v, %v", rc, err)
	}
}

func TestASecondGatewayClaimingAHostNameIsRefused(t *testing.T) {
	c := sharedCluster(t)
	join(t, c.url(0), "clash", func(c *Config) { c.Instance = "first" })
	_, err := Connect(testutil.Context(t, 10*time.Second), Config{URLs: c.url(1), Host: "clash", Instance: "second", RosterTTL: testTTL})
	if !errors.Is(err, ErrHostTaken) || !strings.Contains(err.Error(), `"clash"`) {
		t.Fatalf("second claim: %v", err)
	}
	// The same gateway restarting takes its lease over.
	// It asks for another TTL, but the federation's is the bucket's.
	again := join(t, c.url(2), "clash", func(c *Config) { c.Instance = "first"; c.RosterTTL = time.Minute })
	if again.Host() != "clash" || again.cfg.RosterTTL != testTTL {
		t.Fatal(again.Host(), again.cfg.RosterTTL)
	}
}

func TestHostileMessagesAreDroppedAndCounted(t *testing.T) {
	c := sharedCluster(t)
	// Host names of this run only: a second run (-count=2) would find the
	// first one's "evil" pinned to another key, and its drops counted as
	// untrusted.
	tag := randomID()[:6]
	hostile, evilHost := "hostile-"+tag, "evil-"+tag
	h := join(t, c.url(1), hostile)
	p := &peer{sessions: []message.Session{session("x", "x", message.ProtocolClaude)}}
	serve(t, h, p)
	nc, err := nats.Connect(c.url(0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := testutil.Context(t, 20*time.Second)
	evil := testSigner(t)
	kv, _ := js.KeyValue(ctx, rosterBucket)
	putRoster(t, kv, evil, evilHost)
	testutil.Eventually(t, "hostile pins evil's key", func() bool {
		r, _ := h.keys.check(evilHost, evil.key.Public().(ed25519.PublicKey), false)
		return r == 0
	})
	// The shared roster may still hold bad entries other tests put (for a
	// TTL): hostile counted them as it read the bucket, before evil's.
	want := h.Dropped()
	signed := func(e envelope) []byte {
		b, err := evil.envelope(e)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	to := func(id, host, address string) []byte {
		return signed(envelope{Kind: kindMessage, From: evilHost, To: host, Message: &message.Message{ID: id, To: address, Body: "b"}})
	}
	good := func(id, host string) []byte { return to(id, host, "uds:/run/x.sock") }
	bad := [][]byte{
		[]byte("not json"),
		[]byte(`{"v":2,"kind":"message"}`),
		good("m-misrouted", "someone-else"),
		signed(envelope{Kind: kindReceipt, From: evilHost, To: hostile, Receipt: &message.Receipt{MsgID: "x", Status: message.StatusDelivered}}),
		[]byte(`{"v":1,"kind":"message","from_host":"` + evilHost + `","to_host":"` + hostile + `","message":{"id":"","to":"x"}}`),
	}
	run := randomID() // the stream's de-duplication outlives a test run
	for i, b := range bad {
		if _, err := js.Publish(ctx, inSubject(hostile), b, jetstream.WithMsgID(fmt.Sprintf("bad-%d-%s", i, run))); err != nil {
			t.Fatal(err)
		}
	}
	// A well-formed message for a socket this host never published: any
	// socket of its user, reached by guessing its path.
	if _, err := js.Publish(ctx, inSubject(hostile), to("m-unlisted", hostile, "uds:/run/secret.sock")); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, inSubject(hostile), good("m-good", hostile)); err != nil {
		t.Fatal(err)
	}
	// Over the cap, the server refuses it before anyone reads it.
	if _, err := js.Publish(ctx, inSubject(hostile), make([]byte, MaxEnvelope+1)); err == nil {
		t.Fatal("the stream stored an oversized message")
	}
	// A roster entry that does not check out.
	if _, err := kv.Put(ctx, evilHost, []byte(`{"v":1,"host":"not-evil","sessions":[]}`)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the good message is delivered", func() bool { return len(p.received()) == 1 })
	want[ReasonMalformed] += 2
	want[ReasonVersion]++
	want[ReasonMisrouted] += 3
	if !testutil.Within(testutil.Patience, func() bool { return fmt.Sprint(h.Dropped()) == fmt.Sprint(want) }) {
		t.Fatalf("drops counted %v, want %v", h.Dropped(), want)
	}
	if got := p.received(); len(got) != 1 || got[0].ID != "m-good" || got[0].From != evilHost {
		t.Fatalf("delivered %+v", got)
	}
}

func TestAThousandMessagesSurviveANodeKilled(t *testing.T) {
	c, err := startCluster(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.shutdown()
	// The cluster is this test's own, so its roster TTL can be longer than
	// testTTL: replacing the leader on a loaded machine can hold heartbeats
	// back longer than 3 s, and the sink would drop out of the roster
	// (sends refused, not lost) while the test is about losing nothing.
	longTTL := func(c *Config) { c.RosterTTL = 15 * time.Second }
	a := join(t, c.urls(0), "kill-a", longTTL)
	cc := join(t, c.urls(1), "kill-c", longTTL)
	pc := &peer{sessions: []message.Session{session("sink", "s-sink", message.ProtocolClaude)}}
	serve(t, a, &peer{})
	serve(t, cc, pc)
	receipts := run(t, a)
	testutil.Eventually(t, "a lists sink@kill-c", func() bool { _, ok := a.Origin("sink@kill-c", ""); return ok })

	// The stream's leader is the node whose loss hurts most.
	ctx := testutil.Context(t, 60*time.Second)
	info, err := a.stream.Info(ctx)
	if err != nil || info.Cluster == nil {
		t.Fatalf("stream info: %+v, %v", info, err)
	}
	if len(info.Cluster.Replicas) != 2 {
		t.Fatalf("the stream is not R3: %+v", info.Cluster)
	}
	victim := slices.IndexFunc(c.servers, func(s *server.Server) bool { return s.Name() == info.Cluster.Leader })

	const total, senders = 1000, 16
	var sent atomic.Int64
	var wg sync.WaitGroup
	for w := range senders {
		wg.Go(func() {
			for i := w; i < total; i += senders {
				m := message.Message{ID: fmt.Sprintf("kill-%04d", i), To: "sink@kill-c", Body: "x"}
				// Queued: not stored within the send's wait (the leader was
				// being replaced), kept and published in order later.
				if rc, err := a.Leg().Send(ctx, m); err != nil || rc.Status != message.StatusSent && rc.Status != message.StatusQueued {
					t.Errorf("send %s: %+v, %v", m.ID, rc, err)
					return
				}
				sent.Add(1)
			}
		})
	}
	testutil.EventuallyWithin(t, 30*time.Second, "a third sent", func() bool { return sent.Load() >= total/3 })
	t.Logf("killing %s (stream leader) after %d sends", c.servers[victim].Name(), sent.Load())
	c.servers[victim].Shutdown()
	wg.Wait()

	delivered := map[string]int{}
	all := testutil.Within(40*time.Second, func() bool {
		for _, m := range pc.take() {
			delivered[m.ID]++
		}
		return len(delivered) == total
	})
	if !all {
		for _, h := range []*Node{a, cc} {
			for _, d := range []string{"in-", "rc-"} {
				ci, err := h.stream.Consumer(ctx, d+h.Host())
				if err != nil {
					t.Logf("%s%s: %v", d, h.Host(), err)
					continue
				}
				info, err := ci.Info(ctx)
				t.Logf("%s%s: %+v %+v %v", d, h.Host(), info, info.Cluster, err)
			}
		}
		t.Fatalf("delivered %d of %d", len(delivered), total)
	}
	time.Sleep(2 * time.Second) // one AckWait: a redelivery would show now
	for _, m := range pc.take() {
		delivered[m.ID]++
	}
	for id, k := range delivered {
		if k != 1 {
			t.Errorf("%s delivered %d times", id, k)
		}
	}
	if len(delivered) != total {
		t.Fatalf("delivered %d distinct of %d", len(delivered), total)
	}
	seen := map[string]bool{}
	testutil.EventuallyWithin(t, 30*time.Second, "every receipt back", func() bool {
		for {
			select {
			case ev := <-receipts:
				seen[ev.Receipt.MsgID] = true
			default:
				return len(seen) == total
			}
		}
	})
}

func TestWrongCredentialsFailAtStart(t *testing.T) {
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		Nkeys: []*server.NkeyUser{{Nkey: pub}}})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer s.Shutdown()
	if !s.ReadyForConnections(5 * time.Second) {
		t.Fatal("server did not start")
	}
	other, _ := nkeys.CreateUser()
	seed, _ := other.Seed()
	file := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(file, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Connect(testutil.Context(t, 10*time.Second), Config{URLs: s.ClientURL(), Host: "creds", NKeyFile: file})
	if !errors.Is(err, ErrCredentials) {
		t.Fatalf("connect with a stranger's key: %v", err)
	}
	t.Log(err)
}

func TestEmbeddedServerIsJoinedByURL(t *testing.T) {
	dir := t.TempDir()
	e := join(t, Embedded, "emb-a", func(c *Config) { c.Listen = "127.0.0.1:0"; c.StateDir = dir; c.Replicas = 0 })
	if e.ClientURL() == "" {
		t.Fatal("no client url")
	}
	if _, err := os.Stat(filepath.Join(dir, "federation", "jetstream")); err != nil {
		t.Fatalf("jetstream store: %v", err)
	}
	b := join(t, e.ClientURL(), "emb-b")
	pb := &peer{sessions: []message.Session{session("work", "s-w", message.ProtocolClaude)}}
	serve(t, e, &peer{})
	serve(t, b, pb)
	testutil.Eventually(t, "the embedded host lists work@emb-b", func() bool { _, ok := e.Origin("work@emb-b", ""); return ok })
	rc, err := e.Leg().Send(testutil.Context(t, 10*time.Second), message.Message{ID: "emb-1", To: "work@emb-b", Body: "hi"})
	if err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send: %+v, %v", rc, err)
	}
	testutil.Eventually(t, "b delivers it", func() bool { return len(pb.received()) == 1 })
}
