package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

func TestFollowAllFollowsNoMoreThanMaxFollowedSessions(t *testing.T) {
	api := &syncAPI{}
	for i := range 5 {
		api.sessions = append(api.sessions, RemoteSession{ID: fmt.Sprintf("session_%d", i), Status: "active"})
	}
	l, err := NewLeg(LegConfig{API: api, BaseURL: "http://127.0.0.1:1", OrgUUID: "org-1", Follow: []string{FollowAll},
		ListInterval: 10 * time.Millisecond, MaxFollowed: 2})
	if err != nil {
		t.Fatal(err)
	}
	runLeg(t, l)
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		refused, links := l.refused, len(l.links)
		l.mu.Unlock()
		if links > 2 {
			t.Fatalf("%d sessions followed, want at most 2", links)
		}
		if refused >= 6 { // two listings' worth
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("refused %d sessions, want the 3 past the cap counted at each listing", refused)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// endlessAPI serves a history that never ends, one event a page.
type endlessAPI struct{ stubAPI }

func (*endlessAPI) EventsAfter(_ context.Context, _ string, after string) ([]json.RawMessage, bool, error) {
	n := 0
	if after != "" {
		fmt.Sscanf(after, "u%d", &n)
		n++
	}
	return []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"type":"user","uuid":"u%d","message":{"role":"user","content":"x"}}`, n))}, true, nil
}

func TestTheBacklogOfAHistoryThatNeverEndsReadsABoundedNumberOfPages(t *testing.T) {
	l, err := NewLeg(LegConfig{API: &endlessAPI{}, BaseURL: "http://127.0.0.1:1", Follow: []string{"session_01a"}})
	if err != nil {
		t.Fatal(err)
	}
	f := &follow{prompts: newPrompts(), assistant: map[string]wire.Assistant{}}
	afterID, _, _, err := l.backlog(context.Background(), "session_01a", f, emitterTo(make(chan message.Event, 16)))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("u%d", maxBacklogPages-1); afterID != want {
		t.Fatalf("resumes after %s, want %s: the last event of the pages read", afterID, want)
	}
}
