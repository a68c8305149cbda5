package natscluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/testkit/natscluster"
)

func TestAClusterKeepsAReplicatedStreamThroughAKilledNode(t *testing.T) {
	c := natscluster.Start(t, natscluster.Options{})
	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	// A stream just created may not have elected its leader yet ("no
	// response from stream"): publishSoon retries under one message id.
	publishSoon(t, ctx, js, "before")
	info, err := st.Info(ctx)
	if err != nil || info.Cluster == nil {
		t.Fatalf("info %+v %v", info, err)
	}
	leader := c.Index(info.Cluster.Leader)
	if leader < 0 {
		t.Fatalf("leader %q is not a node of ours", info.Cluster.Leader)
	}
	c.Kill(leader)
	if c.Running(leader) {
		t.Fatal("the killed node still runs")
	}
	publishSoon(t, ctx, js, "after-kill")
	c.Restart(leader)
	publishSoon(t, ctx, js, "after-restart")
	info, err = st.Info(ctx)
	if err != nil || info.State.Msgs != 3 {
		t.Fatalf("stream holds %+v, %v; want 3 messages", info.State, err)
	}
}

func publishSoon(t *testing.T, ctx context.Context, js jetstream.JetStream, body string) {
	t.Helper()
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.Publish(actx, "t.1", []byte(body), jetstream.WithMsgID(body))
		cancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("publish %s: %v", body, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestAProxyCutsOneClientOffAndHeals(t *testing.T) {
	c := natscluster.Start(t, natscluster.Options{Nodes: 1})
	p := natscluster.NewProxy(t, c.URLs())
	down, up := make(chan struct{}, 1), make(chan struct{}, 1)
	nc, err := nats.Connect(p.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { down <- struct{}{} }),
		nats.ReconnectHandler(func(*nats.Conn) { up <- struct{}{} }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	direct, err := nats.Connect(c.URL(0))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()

	p.Cut()
	waitFor(t, down, "the proxied client to notice the cut")
	if direct.Status() != nats.CONNECTED {
		t.Fatal("a direct client lost its link too")
	}
	time.Sleep(300 * time.Millisecond) // several reconnect attempts, each refused
	if nc.Status() == nats.CONNECTED {
		t.Fatal("the proxied client reconnected through a cut")
	}
	p.Heal()
	waitFor(t, up, "the proxied client to reconnect after the heal")
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("waited 20s for %s", what)
	}
}
