package federation

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
)

// unsteadyLeases is the lease bucket as a restarted gateway may find it:
// its first update unanswered (the stream electing a leader), the lease
// renewed by someone between its read and our update, or lapsing between
// our create and our read.
type unsteadyLeases struct {
	jetstream.KeyValue
	updates      atomic.Int32
	updateLost   bool // the first update gets no response
	renewedAside bool // before the first update, the lease is written again
	lapses       bool // before the first read, the lease lapses
	gets         atomic.Int32
}

func (u *unsteadyLeases) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if u.gets.Add(1) == 1 && u.lapses {
		if err := u.KeyValue.Delete(ctx, key); err != nil {
			return nil, err
		}
	}
	return u.KeyValue.Get(ctx, key)
}

func (u *unsteadyLeases) Update(ctx context.Context, key string, v []byte, rev uint64) (uint64, error) {
	if u.updates.Add(1) == 1 {
		switch {
		case u.updateLost:
			return 0, jetstream.ErrNoStreamResponse
		case u.renewedAside:
			if _, err := u.KeyValue.Put(ctx, key, v); err != nil {
				return 0, err
			}
		}
	}
	return u.KeyValue.Update(ctx, key, v, rev)
}

func TestARestartedGatewayTakesItsOwnLeaseOverWhateverTheClusterAnswersFirst(t *testing.T) {
	c := sharedCluster(t)
	tag := randomID()[:6]
	join(t, c.url(0), "cl-x-"+tag) // the bucket exists once a gateway joined
	_, js := rawConn(t, c.url(1))
	kv, err := js.KeyValue(testutil.Context(t, 10*time.Second), leaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		leases  *unsteadyLeases
		holder  string // whose lease is there before the claim; "" none
		wantErr error
	}{
		{"its own lease, the first update unanswered: updated again", &unsteadyLeases{updateLost: true}, "me", nil},
		{"its own lease, renewed between read and update: read again", &unsteadyLeases{renewedAside: true}, "me", nil},
		{"its own lease, lapsing before it is read: created again", &unsteadyLeases{lapses: true}, "me", nil},
		{"another gateway's lease: the name is taken", &unsteadyLeases{}, "someone else", ErrHostTaken},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testutil.Context(t, 20*time.Second)
			host := "cl-" + tag + "-" + string(rune('a'+i))
			if _, err := kv.Create(ctx, host, []byte(tt.holder)); err != nil {
				t.Fatal(err)
			}
			tt.leases.KeyValue = kv
			n := &Node{cfg: Config{Clock: clock.Real{}, Host: host, Instance: "me", RosterTTL: time.Minute}, log: discard(), leases: tt.leases}
			err := n.claim(ctx)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("claim: %v, want %v", err, tt.wantErr)
			}
			e, gerr := kv.Get(ctx, host)
			if gerr != nil {
				t.Fatal(gerr)
			}
			want := "me"
			if tt.wantErr != nil {
				want = tt.holder
			}
			if string(e.Value()) != want {
				t.Fatalf("the lease holds %q, want %q", e.Value(), want)
			}
			if tt.wantErr == nil && n.leaseRev != e.Revision() {
				t.Fatalf("the node holds revision %d of the lease, which is at %d: its next renewal would fail", n.leaseRev, e.Revision())
			}
		})
	}
}
