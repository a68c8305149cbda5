package remote

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// listAPI is a stubAPI whose listing can hang until its context ends, or
// fail, as a cloud gone dark does.
type listAPI struct {
	stubAPI
	mu    sync.Mutex
	hang  bool
	fail  error
	calls int
}

func (a *listAPI) ListSessions(ctx context.Context) ([]RemoteSession, error) {
	a.mu.Lock()
	a.calls++
	hang, fail := a.hang, a.fail
	a.mu.Unlock()
	if hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if fail != nil {
		return nil, fail
	}
	return a.stubAPI.ListSessions(ctx)
}

func (a *listAPI) set(hang bool, fail error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hang, a.fail = hang, fail
}

// ceiling bounds a Sessions call that must not wait on the API: ListWait
// (50 ms here) plus a wide margin for a loaded machine. The API hangs for
// ListTimeout (1 min here) otherwise.
const ceiling = 5 * time.Second

func timedSessions(t *testing.T, l *Leg) ([]string, []bool) {
	t.Helper()
	start := time.Now()
	ss, err := l.Sessions(context.Background())
	if took := time.Since(start); took > ceiling {
		t.Fatalf("Sessions took %v while the API hangs, want under %v", took, ceiling)
	}
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var stale []bool
	for _, s := range ss {
		ids = append(ids, s.SessionID)
		stale = append(stale, s.Stale)
	}
	return ids, stale
}

func TestSessionsNeverWaitOnAHangingAPI(t *testing.T) {
	newLeg := func(api *listAPI, follow ...string) *Leg {
		l, err := NewLeg(LegConfig{API: api, BaseURL: "http://127.0.0.1:1", Follow: follow,
			ListWait: 50 * time.Millisecond, ListTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.stopListing)
		return l
	}
	t.Run("with no listing yet, the followed ids are listed stale", func(t *testing.T) {
		api := &listAPI{}
		api.set(true, nil)
		l := newLeg(api, "session_01a")
		ids, stale := timedSessions(t, l)
		if len(ids) != 1 || ids[0] != "session_01a" || !stale[0] {
			t.Fatalf("ids %v stale %v, want session_01a stale", ids, stale)
		}
		// A second call joins the listing under way rather than start one.
		timedSessions(t, l)
		api.mu.Lock()
		calls := api.calls
		api.mu.Unlock()
		if calls != 1 {
			t.Fatalf("%d listings under way, want 1", calls)
		}
	})
	t.Run("after a good listing the API hanging or failing serves the last one, stale", func(t *testing.T) {
		api := &listAPI{stubAPI: stubAPI{sessions: []RemoteSession{{ID: "session_01a", Title: "a"}, {ID: "session_01b", Title: "b"}}}}
		l := newLeg(api, FollowAll)
		if ids, stale := timedSessions(t, l); len(ids) != 2 || stale[0] {
			t.Fatalf("ids %v stale %v, want both fresh", ids, stale)
		}
		api.set(false, errors.New("HTTP 503"))
		<-l.refreshing()
		if ids, stale := timedSessions(t, l); len(ids) != 2 || !stale[0] || !stale[1] {
			t.Fatalf("ids %v stale %v, want both from the last listing, stale", ids, stale)
		}
		api.set(true, nil)
		l.refreshing() // hangs until the test ends
		if ids, _ := timedSessions(t, l); len(ids) != 2 {
			t.Fatalf("ids %v, want the last listing", ids)
		}
	})
	t.Run("a failed first listing is still an error", func(t *testing.T) {
		api := &listAPI{}
		api.set(false, errors.New("HTTP 401"))
		l := newLeg(api)
		<-l.refreshing()
		if _, err := l.Sessions(context.Background()); err == nil {
			t.Fatal("Sessions after a failed first listing: no error")
		}
	})
}
