package federation

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/natscluster"
)

// permittedCluster starts a real three-node cluster whose every node
// includes the documented permissions file, each host's key replaced by
// a fresh one; it returns each host's nkey seed file.
func permittedCluster(t *testing.T) (*natscluster.Cluster, map[string]string) {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join("..", "..", "docs", "federation", "permissions.conf"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(conf)
	seeds := map[string]string{}
	dir := t.TempDir()
	for _, h := range []string{"alpha", "beta", "gamma"} {
		u, _ := nkeys.CreateUser()
		pub, _ := u.PublicKey()
		seed, _ := u.Seed()
		re := regexp.MustCompile(`(?m)^` + strings.ToUpper(h) + `_NKEY: "U[A-Z0-9]+"$`)
		if !re.MatchString(text) {
			t.Fatalf("the permissions file has no %s_NKEY line", strings.ToUpper(h))
		}
		text = re.ReplaceAllString(text, strings.ToUpper(h)+`_NKEY: "`+pub+`"`)
		seeds[h] = testutil.WriteFile(t, filepath.Join(dir, h+".nk"), seed, 0o600)
	}
	c := natscluster.Start(t, natscluster.Options{Nodes: 3, Config: func(int) string { return text }})
	return c, seeds
}

// violations collects what the server refused a client.
type violations struct {
	mu   sync.Mutex
	errs []string
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.errs = append(v.errs, err.Error())
}

func (v *violations) has(subject string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, e := range v.errs {
		if strings.Contains(strings.ToLower(e), "permissions violation") && strings.Contains(e, `"`+subject+`"`) {
			return true
		}
	}
	return false
}

func TestSubjectPermissionsKeepEachHostToItsOwnSubjects(t *testing.T) {
	c, seeds := permittedCluster(t)
	// Every refusal the gateways hear is logged: under the documented
	// permissions there must be none, whatever runs in the background.
	var logs lockedLog
	withKey := func(h string) func(*Config) {
		return func(c *Config) {
			c.NKeyFile = seeds[h]
			c.Log = slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, &logs), nil))
		}
	}
	a := join(t, c.URL(0), "alpha", withKey("alpha"))
	b := join(t, c.URL(1), "beta", withKey("beta"))
	pa := &peer{sessions: []message.Session{session("lead", "s-lead", message.ProtocolClaude)}}
	pb := &peer{sessions: []message.Session{session("work", "s-work", message.ProtocolQwen)}, status: message.StatusHeld}
	serve(t, a, pa)
	serve(t, b, pb)
	receipts := run(t, a)
	run(t, b)
	ctx := testutil.Context(t, 60*time.Second)

	// Under the permissions, a and b still exchange a message and its receipts.
	testutil.Eventually(t, "alpha lists work@beta", func() bool { _, ok := a.Origin("work@beta", ""); return ok })
	if rc, err := a.Leg().Send(ctx, message.Message{ID: "perm-1", To: "work@beta", Body: "hi"}); err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send: %+v, %v", rc, err)
	}
	testutil.Eventually(t, "beta delivers it", func() bool { return len(pb.received()) == 1 })
	var got []message.Status
	next := func() {
		select {
		case ev := <-receipts:
			got = append(got, ev.Receipt.Status)
		case <-ctx.Done():
			t.Fatalf("receipts %v", got)
		}
	}
	// The held receipt first, as a person's release comes after it: relayed
	// at once, the delivered one could be settled before the held one.
	next()
	if !b.Relay(ctx, message.Receipt{MsgID: "perm-1", Status: message.StatusDelivered}) {
		t.Fatal("relay")
	}
	next()
	if got[0] != message.StatusHeld || got[1] != message.StatusDelivered {
		t.Fatalf("receipts %v", got)
	}
	testutil.Eventually(t, "beta lists lead@alpha", func() bool { _, ok := b.Origin("lead@alpha", ""); return ok })
	if rc, err := b.Leg().Send(ctx, message.Message{ID: "perm-2", To: "lead@alpha", Body: "back"}); err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send back: %+v, %v", rc, err)
	}
	testutil.Eventually(t, "alpha delivers the answer", func() bool { return len(pa.received()) == 1 })

	// Beta's credentials, in a client of its own: everything that would
	// act as alpha, or read what is alpha's, the server refuses.
	var v violations
	opt, err := nats.NkeyOptionFromSeed(seeds["beta"])
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(c.URL(2), opt, nats.CustomInboxPrefix(inboxPrefix("beta")), nats.ErrorHandler(v.handler))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 1500*time.Millisecond) }
	refused := func(what, subject string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: the server took it", what)
		}
		if !testutil.Within(testutil.Patience, func() bool { return v.has(subject) }) {
			t.Errorf("%s: no permissions violation for %s (%v)", what, subject, err)
		}
	}
	kvPut := func(bucket, key string) error {
		sctx, cancel := short()
		defer cancel()
		kv, err := js.KeyValue(sctx, bucket)
		if err != nil {
			return err
		}
		_, err = kv.Put(sctx, key, []byte(`{"v":1,"host":"alpha","sessions":[]}`))
		return err
	}
	pub := func(subject string) error {
		sctx, cancel := short()
		defer cancel()
		_, err := js.Publish(sctx, subject, []byte("x"))
		return err
	}
	refused("alpha's roster key", "$KV.gateway_roster.alpha", kvPut(rosterBucket, "alpha"))
	refused("alpha's host lease", "$KV.gateway_hosts.alpha", kvPut(leaseBucket, "alpha"))
	refused("alpha's prompts", "$KV.gateway_prompts.alpha", kvPut(promptBucket, "alpha"))
	refused("beta's own inbound subject", inSubject("beta"), pub(inSubject("beta")))
	refused("beta's own receipt subject", receiptSubject("beta"), pub(receiptSubject("beta")))
	refused("a subject outside the federation", "gateway.other", pub("gateway.other"))
	{
		sctx, cancel := short()
		_, err := js.Consumer(sctx, streamName, "in-alpha")
		cancel()
		refused("alpha's consumer", "$JS.API.CONSUMER.INFO.GATEWAY_FED.in-alpha", err)
	}
	{
		sctx, cancel := short()
		_, err := js.CreateOrUpdateConsumer(sctx, streamName, jetstream.ConsumerConfig{Durable: "in-beta2", FilterSubject: inSubject("alpha"), AckPolicy: jetstream.AckExplicitPolicy})
		cancel()
		refused("a consumer of alpha's subject", "$JS.API.CONSUMER.CREATE.GATEWAY_FED.in-beta2.gateway.fed.in.alpha", err)
	}
	{
		_, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT.GATEWAY_FED.in-alpha", []byte(`{"batch":1,"no_wait":true}`), time.Second)
		refused("a pull from alpha's consumer", "$JS.API.CONSUMER.MSG.NEXT.GATEWAY_FED.in-alpha", err)
	}
	{
		sctx, cancel := short()
		err := js.DeleteStream(sctx, streamName)
		cancel()
		refused("deleting the stream", "$JS.API.STREAM.DELETE.GATEWAY_FED", err)
	}
	{
		sctx, cancel := short()
		_, err := js.UpdateStream(sctx, jetstream.StreamConfig{Name: streamName, Subjects: []string{"gateway.fed.>"}})
		cancel()
		refused("reshaping the stream", "$JS.API.STREAM.UPDATE.GATEWAY_FED", err)
	}
	// Listening in: alpha's inbound subject, its reply inbox.
	for _, s := range []string{inSubject("alpha"), inboxPrefix("alpha") + ".>", "gateway.fed.>"} {
		sub, err := nc.SubscribeSync(s)
		if err == nil {
			_ = nc.Flush()
		}
		refused("subscribing to "+s, s, errors.Join(err, errors.New("subscriptions are refused asynchronously")))
		if sub != nil {
			_ = sub.Unsubscribe()
		}
	}
	// What beta's gateway sends alpha still arrives, and only there.
	if rc, err := b.Leg().Send(ctx, message.Message{ID: "perm-3", To: "lead@alpha", Body: "after"}); err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send after: %+v, %v", rc, err)
	}
	testutil.Eventually(t, "alpha delivers it", func() bool { return len(pa.received()) == 2 })
	if strings.Contains(strings.ToLower(logs.String()), "permissions violation") {
		t.Errorf("a gateway was refused something it needs:\n%s", logs.String())
	}
	if d := a.Dropped(); len(d) != 0 {
		t.Errorf("alpha dropped %v", d)
	}
	if d := b.Dropped(); len(d) != 0 {
		t.Errorf("beta dropped %v", d)
	}
}

type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
