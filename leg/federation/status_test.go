package federation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/natscluster"
)

func TestStatusListsHostsTheirSessionsTheLinkLagAndDrops(t *testing.T) {
	c := sharedCluster(t)
	// Host names of this run only: a durable consumer outlives its host.
	tag := randomID()[:6]
	ha, hb, hidle := "st-a-"+tag, "st-b-"+tag, "st-idle-"+tag
	a := join(t, c.url(0), ha)
	b := join(t, c.url(1), hb)
	idle := join(t, c.url(2), hidle)
	serve(t, a, &peer{sessions: []message.Session{session("one", "st-1", message.ProtocolClaude), session("two", "st-2", message.ProtocolQwen)}})
	serve(t, b, &peer{sessions: []message.Session{session("three", "st-3", message.ProtocolQwen)}})
	// idle's consumer exists, but nothing consumes: what arrives waits.
	ictx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := idle.Serve(ictx, Local{}); err != nil {
			t.Errorf("idle serve: %v", err)
		}
	}()
	ctx := testutil.Context(t, 20*time.Second)
	testutil.EventuallyWithin(t, 30*time.Second, "idle's consumer exists", func() bool {
		// Each look bounded: a request the cluster drops (busy, or
		// electing) is made again, not waited on for the whole test.
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := idle.stream.Consumer(lctx, "in-"+hidle)
		return err == nil
	})
	stop()
	<-done
	for i := range 3 {
		id := fmt.Sprintf("st-lag-%d-%s", i, tag)
		m, _ := a.encode(envelope{Kind: kindMessage, From: ha, To: hidle, Message: &message.Message{ID: id, To: "uds:/x.sock"}})
		if _, err := a.js.Publish(ctx, inSubject(hidle), m, jetstream.WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.js.Publish(ctx, inSubject(hb), []byte("not json")); err != nil {
		t.Fatal(err)
	}
	hosts := func(st Status) map[string]int {
		m := map[string]int{}
		for _, h := range st.Hosts {
			if strings.HasSuffix(h.Host, tag) && h.Reachable {
				m[h.Host] = h.Sessions
			}
		}
		return m
	}
	want := map[string]int{ha: 2, hb: 1, hidle: 0} // idle put its (empty) entry at join
	testutil.Eventually(t, "b's status lists a and itself with their sessions, and the drop", func() bool {
		st := b.Status(ctx)
		return fmt.Sprint(hosts(st)) == fmt.Sprint(want) && st.Drops["malformed"] == 1
	})
	st := b.Status(ctx)
	if !st.Enabled || st.Host != hb || !st.Hosts[0].Self || st.Hosts[0].Host != hb || st.Link.State != LinkConnected || st.Link.Server == "" {
		t.Fatalf("status %+v link %+v", st, st.Link)
	}
	if len(st.Consumers) != 2 || st.Consumers[0].Name != "in-"+hb || st.Consumers[1].Name != "rc-"+hb || st.Consumers[0].Error != "" {
		t.Fatalf("consumers %+v", st.Consumers)
	}
	// idle's lag is exactly what waits for it (once the consumer's
	// leader has seen the stream move).
	var lag ConsumerStatus
	testutil.Eventually(t, "idle's lag is the three messages", func() bool {
		lag = idle.Status(ctx).Consumers[0]
		return lag.Name == "in-"+hidle && lag.Pending+uint64(lag.AckPending) == 3 && lag.Error == ""
	})

	// What the API serves is what the CLI writes.
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var table, js bytes.Buffer
	if err := WriteStatus(&table, raw, false); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{hb + " (this host)", ha, "link: connected to nats://", "consumer in-" + hb + ": 0 pending", "drops: malformed 1"} {
		if !strings.Contains(table.String(), w) {
			t.Errorf("the table lacks %q:\n%s", w, table.String())
		}
	}
	if err := WriteStatus(&js, raw, true); err != nil {
		t.Fatal(err)
	}
	var back Status
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Host != hb || len(back.Hosts) != len(st.Hosts) {
		t.Fatalf("json %s: %v", js.String(), err)
	}
}

func TestStatusWithoutFederationSaysSo(t *testing.T) {
	var n *Node
	raw, _ := json.Marshal(n.Status(context.Background()))
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		if err := WriteStatus(&out, raw, asJSON); !errors.Is(err, ErrNotEnabled) {
			t.Fatalf("json %v: err %v", asJSON, err)
		}
		if asJSON && strings.TrimSpace(out.String()) != "{\n  \"enabled\": false\n}" {
			t.Fatalf("json: %s", out.String())
		}
	}
	if n.StatusFunc() != nil {
		t.Fatal("a nil node serves a status")
	}
}

// TestReadinessFollowsTheLinkWithItsReason cuts a gateway off a real
// cluster of nats-server processes and heals it.
func TestReadinessFollowsTheLinkWithItsReason(t *testing.T) {
	c := natscluster.Start(t, natscluster.Options{Nodes: 3})
	p := natscluster.NewProxy(t, c.URLs())
	n := join(t, p.URLs(), "ready-a")
	if err := n.Ready(); err != nil {
		t.Fatalf("joined, not ready: %v", err)
	}
	p.Cut()
	var err error
	// The reason follows the state: the client reports it from its own
	// goroutine.
	testutil.Eventually(t, "cut off, not ready, saying why", func() bool {
		err = n.Ready()
		return err != nil && strings.HasPrefix(err.Error(), "federation: link reconnecting (")
	})
	t.Logf("not ready: %v", err)
	if st := n.Link(); st.State != LinkReconnecting || st.Reason == "" {
		t.Fatalf("link %+v", st)
	}
	p.Heal()
	testutil.EventuallyWithin(t, 45*time.Second, "healed, ready again", func() bool { return n.Ready() == nil })
	if st := n.Link(); st.State != LinkConnected || st.Reconnects == 0 || st.Reason != "" {
		t.Fatalf("link %+v", st)
	}
}
