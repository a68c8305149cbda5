package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// gatedAPI holds every history read until released, counting how many
// are under way at once.
type gatedAPI struct {
	*stubAPI
	release chan struct{}

	mu           sync.Mutex
	now, most    int
	sessionsRead map[string]bool
}

func (g *gatedAPI) EventsAfter(ctx context.Context, id, after string) ([]json.RawMessage, bool, error) {
	g.mu.Lock()
	g.now++
	g.most = max(g.most, g.now)
	g.sessionsRead[id] = true
	g.mu.Unlock()
	defer func() { g.mu.Lock(); g.now--; g.mu.Unlock() }()
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	return nil, false, nil
}

func TestAGatewayFollowingManySessionsOpensThemABatchAtATime(t *testing.T) {
	api := &gatedAPI{stubAPI: &stubAPI{}, release: make(chan struct{}), sessionsRead: map[string]bool{}}
	var ids []string
	for i := range maxOpening + 10 {
		ids = append(ids, fmt.Sprintf("session_01many%04d", i))
	}
	l, err := NewLeg(LegConfig{API: api, BaseURL: "http://127.0.0.1:1", Follow: ids})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := make(chan message.Event, 1024)
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, in) }()
	go func() {
		for range in {
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		close(in)
	})
	read := func() int { api.mu.Lock(); defer api.mu.Unlock(); return len(api.sessionsRead) }
	testutil.EventuallyWithin(t, 10*time.Second, "a batch reads its history", func() bool { return read() == maxOpening })
	close(api.release) // the batch opens (and fails to dial): the rest may go
	testutil.EventuallyWithin(t, 10*time.Second, "every session reads its history", func() bool { return read() == len(ids) })
	api.mu.Lock()
	defer api.mu.Unlock()
	if api.most > maxOpening {
		t.Errorf("%d sessions read their history at once, want at most %d", api.most, maxOpening)
	}
}
