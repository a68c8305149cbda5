package federation

import (
	"crypto/ed25519"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// putRoster puts a roster entry for host signed by sg, as a gateway would.
func putRoster(t *testing.T, kv jetstream.KeyValue, sg *signer, host string) {
	t.Helper()
	r := rosterEntry{V: Version, Host: host}
	b, err := sg.sign(domainRoster, &r, &r.seal)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(testutil.Context(t, 10e9), host, b); err != nil {
		t.Fatal(err)
	}
}

// rawConn is a plain client of the test cluster: it publishes what a
// hostile host (or one replaying captured traffic) would.
func rawConn(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func pinned(n *Node, host string, key ed25519.PublicKey) bool {
	r, _ := n.keys.check(host, key, false)
	return r == 0
}

func pubOf(n *Node) ed25519.PublicKey { return n.signer.key.Public().(ed25519.PublicKey) }

func TestAForgedSignatureIsDroppedAndCountedNeverDelivered(t *testing.T) {
	c := sharedCluster(t)
	// Host names and ids of this run only: the shared cluster's stream
	// drops a repeated id for two minutes, and a durable consumer outlives
	// its host, so a second run (-count=2) would see nothing arrive.
	tag := randomID()[:6]
	ha, hb := "sig-a-"+tag, "sig-b-"+tag
	a := join(t, c.url(0), ha)
	b := join(t, c.url(1), hb)
	pb := &peer{sessions: []message.Session{session("work", "s-w", message.ProtocolClaude)}}
	serve(t, a, &peer{})
	serve(t, b, pb)
	_, js := rawConn(t, c.url(2))
	ctx := testutil.Context(t, 20*time.Second)
	testutil.Eventually(t, "b pins a's key", func() bool { return pinned(b, ha, pubOf(a)) })
	testutil.Eventually(t, "a lists work@"+hb, func() bool { _, ok := a.Origin("work@"+hb, ""); return ok })

	msg := func(id string) envelope {
		return envelope{Kind: kindMessage, From: ha, To: hb, Message: &message.Message{ID: id + "-" + tag, To: "uds:/run/s-w.sock", Body: "rm -rf"}}
	}
	// Signed by another key that claims to be a's.
	mallory := testSigner(t)
	mallory.pub = a.PublicKey()
	forged, err := mallory.envelope(msg("forged-1"))
	if err != nil {
		t.Fatal(err)
	}
	// a's own signature, over another body.
	real, err := a.encode(msg("forged-2"))
	if err != nil {
		t.Fatal(err)
	}
	edited := []byte(strings.Replace(string(real), `"body":"rm -rf"`, `"body":"rm -rf /"`, 1))
	// No signature at all.
	unsigned, err := jsonx.Marshal(envelope{V: Version, Kind: kindMessage, From: ha, To: hb, Message: &message.Message{ID: "forged-3-" + tag, To: "uds:/run/s-w.sock"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range [][]byte{forged, edited, unsigned} {
		if _, err := js.Publish(ctx, inSubject(hb), b, jetstream.WithMsgID(fmt.Sprintf("forged-%d-%s", i, tag))); err != nil {
			t.Fatal(err)
		}
	}
	// The genuine message after them is delivered, alone.
	if rc, err := a.Leg().Send(ctx, message.Message{ID: "genuine-" + tag, To: "work@" + hb, Body: "hi"}); err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send: %+v, %v", rc, err)
	}
	testutil.Eventually(t, "the genuine message is delivered", func() bool { return len(pb.received()) == 1 })
	// (Other tests' hostile roster entries may be counted too: the bucket is shared.)
	if !testutil.Within(10*time.Second, func() bool { return b.Dropped()[ReasonSignature] == 3 }) {
		t.Fatalf("dropped %v, want 3 for their signature", b.Dropped())
	}
	if got := pb.received(); len(got) != 1 || got[0].ID != "genuine-"+tag {
		t.Fatalf("delivered %+v", got)
	}
}

func TestAnEnvelopeClaimingAnotherOriginHostIsDropped(t *testing.T) {
	c := sharedCluster(t)
	tag := randomID()[:6] // host names and ids of this run only, as above
	ha, hb, hm, ghost := "orig-a-"+tag, "orig-b-"+tag, "orig-m-"+tag, "orig-ghost-"+tag
	a := join(t, c.url(0), ha)
	b := join(t, c.url(1), hb)
	m := join(t, c.url(2), hm) // a member of the federation, turned hostile
	pb := &peer{sessions: []message.Session{session("work", "s-w", message.ProtocolClaude)}}
	serve(t, b, pb)
	ctx := testutil.Context(t, 20*time.Second)
	testutil.Eventually(t, "b pins a's and m's keys", func() bool {
		return pinned(b, ha, pubOf(a)) && pinned(b, hm, pubOf(m))
	})
	as := func(from, id string) envelope {
		return envelope{Kind: kindMessage, From: from, To: hb, Message: &message.Message{ID: id + "-" + tag, To: "uds:/run/s-w.sock", Body: "from a, honest"}}
	}
	// m signs with its own key, as a; and as a host nobody has heard of,
	// which it cannot pin from an envelope.
	for i, e := range []envelope{as(ha, "claim-1"), as(ghost, "claim-2")} {
		b, err := m.encode(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.publish(ctx, inSubject(hb), fmt.Sprintf("claim-%d-%s", i, tag), func() ([]byte, error) { return b, nil }); err != nil {
			t.Fatal(err)
		}
	}
	// m's own message, in its own name, is delivered.
	own, _ := m.encode(as(hm, "honest"))
	if err := m.publish(ctx, inSubject(hb), "honest-"+tag, func() ([]byte, error) { return own, nil }); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "m's own message delivered", func() bool { return len(pb.received()) == 1 })
	testutil.Eventually(t, "the claims counted", func() bool { return b.Dropped()[ReasonUntrusted] == 2 })
	if got := pb.received(); got[0].ID != "honest-"+tag || got[0].From != hm {
		t.Fatalf("delivered %+v", got)
	}
	if pinned(b, ghost, pubOf(m)) {
		t.Fatal("an envelope pinned a new host's key")
	}
}

func TestARosterEntryPutWithAnotherHostsKeyIsIgnored(t *testing.T) {
	c := sharedCluster(t)
	tag := randomID()[:6] // host names of this run only: the roster bucket is shared
	ha := "rkey-a-" + tag
	a := join(t, c.url(0), ha)
	obs := join(t, c.url(1), "rkey-o-"+tag)
	serve(t, a, &peer{sessions: []message.Session{session("lead", "s-lead", message.ProtocolClaude)}})
	testutil.Eventually(t, "the observer lists lead@"+ha, func() bool { _, ok := obs.Origin("lead@"+ha, ""); return ok })

	_, js := rawConn(t, c.url(2))
	ctx := testutil.Context(t, 20*time.Second)
	kv, err := js.KeyValue(ctx, rosterBucket)
	if err != nil {
		t.Fatal(err)
	}
	b := testSigner(t) // host b's key
	evil := rosterEntry{V: Version, Host: ha, Sessions: []message.Session{session("evil", "s-evil", message.ProtocolClaude)}}
	put := func(sg *signer) {
		r := evil
		v, err := sg.sign(domainRoster, &r, &r.seal)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, ha, v); err != nil {
			t.Fatal(err)
		}
	}
	put(b) // b's key: not a's
	b.pub = a.PublicKey()
	put(b) // b's signature under a's key
	testutil.Eventually(t, "both counted", func() bool {
		d := obs.Dropped()
		return d[ReasonUntrusted] == 1 && d[ReasonSignature] == 1
	})
	if _, ok := obs.Origin("evil@"+ha, ""); ok {
		t.Fatal("the observer lists a session b put in a's name")
	}
	if _, ok := obs.Origin("lead@"+ha, ""); !ok {
		t.Fatal("the observer forgot a's own entry")
	}
}

func TestReplayedEnvelopesAreDroppedAndCountedAndDeliveredOnce(t *testing.T) {
	c := sharedCluster(t)
	const window = 2 * time.Second
	tag := randomID()[:6] // host names and ids of this run only, as above
	ha, hb, once := "rp-a-"+tag, "rp-b-"+tag, "once-"+tag
	a := join(t, c.url(0), ha, func(c *Config) { c.ReplayWindow = window })
	b := join(t, c.url(1), hb, func(c *Config) { c.ReplayWindow = window })
	pb := &peer{sessions: []message.Session{session("sink", "s-sink", message.ProtocolClaude)}}
	serve(t, a, &peer{})
	serve(t, b, pb)
	receipts := run(t, a)
	ctx := testutil.Context(t, 30*time.Second)
	testutil.Eventually(t, "a lists sink@"+hb, func() bool { _, ok := a.Origin("sink@"+hb, ""); return ok })

	// Someone records what crosses the wire, on the node each side
	// publishes to: a subscription on another node misses what is
	// published before the routes carry its interest there (a loaded
	// machine took long enough).
	_, js := rawConn(t, c.url(2))
	wire := make(chan *nats.Msg, 16)
	for node, s := range []string{inSubject(hb), receiptSubject(ha)} { // a's node 0, b's node 1
		nc, _ := rawConn(t, c.url(node))
		if _, err := nc.ChanSubscribe(s, wire); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if rc, err := a.Leg().Send(ctx, message.Message{ID: once, To: "sink@" + hb, Body: "pay 10"}); err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send: %+v, %v", rc, err)
	}
	var sent, receipt []byte
	for sent == nil || receipt == nil {
		select {
		case m := <-wire:
			if m.Subject == inSubject(hb) {
				sent = m.Data
			} else {
				receipt = m.Data
			}
		case <-ctx.Done():
			t.Fatal("nothing crossed")
		}
	}
	testutil.Eventually(t, "delivered", func() bool { return len(pb.received()) == 1 })
	first := <-receipts
	if first.Receipt.MsgID != once || first.Receipt.Status != message.StatusDelivered {
		t.Fatalf("receipt %+v", first.Receipt)
	}

	replay := func(subject string, b []byte, id string) {
		t.Helper()
		if _, err := js.Publish(ctx, subject, b, jetstream.WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
	}
	// Byte-identical copies, inside the window, under a new de-duplication
	// id so the stream keeps them.
	replay(inSubject(hb), sent, "replay-1-"+tag)
	replay(receiptSubject(ha), receipt, "replay-2-"+tag)
	testutil.Eventually(t, "the copies counted", func() bool {
		return b.Dropped()[ReasonReplayed] == 1 && a.Dropped()[ReasonReplayed] == 1
	})
	// The same message re-signed (a new nonce, as a sender's retry is) is
	// answered from the settled window, not delivered again.
	again, err := a.encode(envelope{Kind: kindMessage, From: ha, To: hb, Message: &message.Message{ID: once, To: "uds:/run/s-sink.sock", Body: "pay 10"}})
	if err != nil {
		t.Fatal(err)
	}
	replay(inSubject(hb), again, "replay-3-"+tag)
	// Past the window: the recorded copy, and a message never seen before
	// that was signed before the window.
	time.Sleep(window + 500*time.Millisecond)
	replay(inSubject(hb), sent, "replay-4-"+tag)
	old := newSigner(a.signer.key, clock.Real{})
	old.now = func() time.Time { return time.Now().Add(-2 * window) }
	stale, err := old.envelope(envelope{Kind: kindMessage, From: ha, To: hb, Message: &message.Message{ID: "stale-" + tag, To: "uds:/run/s-sink.sock", Body: "pay 20"}})
	if err != nil {
		t.Fatal(err)
	}
	replay(inSubject(hb), stale, "replay-5-"+tag)
	testutil.Eventually(t, "the late ones counted", func() bool { return b.Dropped()[ReasonReplayed] == 3 })
	if got := pb.received(); len(got) != 1 || got[0].ID != once {
		t.Fatalf("delivered %d: %+v", len(got), got)
	}
	// The re-signed copy's receipt came back once more (the at-least-once
	// wire), the recorded receipt copy never.
	time.Sleep(500 * time.Millisecond)
	n := 0
	for len(receipts) > 0 {
		ev := <-receipts
		if ev.Receipt.MsgID == once {
			n++
		}
	}
	if n > 1 {
		t.Fatalf("%d more receipts for one message", n)
	}
	if db, da := b.Dropped(), a.Dropped(); db[ReasonReplayed] != 3 || da[ReasonReplayed] != 1 || db[ReasonSignature]+db[ReasonUntrusted]+da[ReasonSignature]+da[ReasonUntrusted] != 0 {
		t.Fatalf("dropped at b %v, at a %v", b.Dropped(), a.Dropped())
	}
}
