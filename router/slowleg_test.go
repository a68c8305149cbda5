package router

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
)

func TestASlowLegDoesNotHoldUpTheOthers(t *testing.T) {
	local := newFake()
	cloud := message.Session{Address: "bridge:session_01", Protocol: message.ProtocolRemote, Name: "cloud", SessionID: "session_01"}
	// The remote leg lists its session until hang is set; then its listing
	// waits for its context to end, as a leg whose service has gone dark does.
	var hang atomic.Bool
	remote := fake(message.ProtocolRemote)
	remote.OnSessions = func(ctx context.Context) ([]message.Session, error) {
		if hang.Load() {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return []message.Session{cloud}, nil
	}
	const listTimeout = 50 * time.Millisecond
	r := New(Config{ListTimeout: listTimeout, RosterTTL: time.Nanosecond}, local, remote)
	if got := len(r.Sessions(context.Background())); got != 4 {
		t.Fatalf("listed %d sessions, want 4", got)
	}
	hang.Store(true)
	// The slow leg waits for its context: without a per-leg bound this
	// call would wait as long as the caller's (a minute here).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, target, err := r.Resolve(ctx, "review")
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("resolving a local name took %v with a leg hanging, want about %v", took, listTimeout)
	}
	if err != nil || target.PID != 12 {
		t.Fatalf("Resolve(review) = %+v, %v", target, err)
	}
	ss := r.Sessions(ctx)
	var stale, fresh int
	for _, s := range ss {
		if s.Stale {
			stale++
			if s.Protocol != message.ProtocolRemote {
				t.Errorf("%s listed stale", s.Address)
			}
		} else {
			fresh++
		}
	}
	if stale != 1 || fresh != 3 {
		t.Fatalf("listed %+v, want the slow leg's last session stale and the 3 local ones fresh", ss)
	}
}
