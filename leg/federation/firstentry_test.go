package federation

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// leaderless is a roster bucket whose stream has no leader yet for its
// first few requests: they get no response, as a client of a cluster that
// is still electing gets.
type leaderless struct {
	jetstream.KeyValue
	gets, puts         atomic.Int32 // made so far
	getsLost, putsLost int32        // the first ones unanswered
}

func (l *leaderless) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if l.gets.Add(1) <= l.getsLost {
		return nil, jetstream.ErrNoStreamResponse
	}
	return l.KeyValue.Get(ctx, key)
}

func (l *leaderless) Put(ctx context.Context, key string, v []byte) (uint64, error) {
	if l.puts.Add(1) <= l.putsLost {
		return 0, jetstream.ErrNoStreamResponse
	}
	return l.KeyValue.Put(ctx, key, v)
}

// rosterOf opens the shared cluster's roster bucket as a plain client.
func rosterOf(t *testing.T, c *cluster, tag string) jetstream.KeyValue {
	t.Helper()
	join(t, c.url(0), "fe-x-"+tag) // the bucket exists once a gateway joined
	_, js := rawConn(t, c.url(1))
	kv, err := js.KeyValue(testutil.Context(t, 10*time.Second), rosterBucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func entryOf(t *testing.T, kv jetstream.KeyValue, host string) (rosterEntry, bool) {
	t.Helper()
	e, err := kv.Get(testutil.Context(t, 10*time.Second), host)
	if err != nil {
		return rosterEntry{}, false
	}
	var r rosterEntry
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		t.Fatalf("entry of %s: %v", host, err)
	}
	return r, true
}

func TestAGatewayStartingWhileTheRosterElectsItsLeaderStillPutsItsFirstEntry(t *testing.T) {
	c := sharedCluster(t)
	tag := randomID()[:6]
	kv := rosterOf(t, c, tag)
	tests := []struct {
		name               string
		there              bool // an entry left by the last run (a crash)
		getsLost, putsLost int32
		wantPuts           int32
	}{
		{"nothing is lost: one get, one put", false, 0, 0, 1},
		{"the first get is unanswered: asked again, then put", false, 1, 0, 1},
		{"the first two puts are unanswered: put a third time", false, 0, 2, 3},
		{"an entry left by a crash is left as it is", true, 1, 0, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := "fe-" + tag + "-" + string(rune('a'+i))
			if tt.there {
				putRoster(t, kv, testSigner(t), host)
			}
			l := &leaderless{KeyValue: kv, getsLost: tt.getsLost, putsLost: tt.putsLost}
			n := &Node{cfg: Config{Clock: clock.Real{}, Host: host}, log: discard(), signer: testSigner(t), roster: l}
			if err := n.firstEntry(testutil.Context(t, 20*time.Second)); err != nil {
				t.Fatalf("first entry: %v", err)
			}
			if got := l.puts.Load(); got != tt.wantPuts {
				t.Fatalf("%d puts, want %d", got, tt.wantPuts)
			}
			if r, ok := entryOf(t, kv, host); !ok || r.Host != host {
				t.Fatalf("the bucket holds %+v (%v) for %s", r, ok, host)
			}
		})
	}
}

func TestSessionsWhosePutFailedArePutAgainWhenListedAgain(t *testing.T) {
	c := sharedCluster(t)
	tag := randomID()[:6]
	kv := rosterOf(t, c, tag)
	host := "fe-p-" + tag
	l := &leaderless{KeyValue: kv, putsLost: 1}
	n := &Node{cfg: Config{Clock: clock.Real{}, Host: host}, log: discard(), signer: testSigner(t), roster: l}
	ss := []message.Session{{SessionID: "s1", Name: "worker", Address: "uds:/tmp/s1.sock", Protocol: message.ProtocolClaude}}
	ctx := testutil.Context(t, 20*time.Second)
	if err := n.PublishSessions(ctx, ss); err == nil {
		t.Fatal("the unanswered put was reported published")
	}
	if err := n.PublishSessions(ctx, ss); err != nil {
		t.Fatalf("listed again: %v", err)
	}
	r, ok := entryOf(t, kv, host)
	if !ok || len(r.Sessions) != 1 || r.Sessions[0].Name != "worker" {
		t.Fatalf("the bucket holds %+v (%v): the sessions listed again were taken as already published", r, ok)
	}
}
