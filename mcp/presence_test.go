package mcp

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
)

// stream opens a session's event stream (GET /mcp) and returns once the
// server has answered it; cancel ends it as a client that vanished would,
// without DELETE.
func stream(t *testing.T, url, session string) (end func()) {
	t.Helper()
	// A stream reopened at once may find the server not done with the one
	// just closed (409, one stream a session): a client retries, as the
	// SDKs do.
	for try := 0; ; try++ {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Header.Set("Authorization", "Bearer secret-token")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(sessionHeader, session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusConflict && try < 20 {
			resp.Body.Close()
			cancel()
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			cancel()
			t.Fatalf("GET stream: %s", resp.Status)
		}
		t.Cleanup(func() { cancel(); resp.Body.Close() })
		return func() { cancel(); resp.Body.Close() }
	}
}

// countDrops makes w's server count its drops, and returns how many of
// reason it counted so far.
func countDrops(w *world) func(reason string) int {
	var mu sync.Mutex
	drops := map[string]int{}
	w.srv.cfg.Drop = func(r string) { mu.Lock(); drops[r]++; mu.Unlock() }
	return func(r string) int { mu.Lock(); defer mu.Unlock(); return drops[r] }
}

// TestAnHTTPClientWhoseStreamEndsLeavesTheRosterAfterStreamGone: a client
// that holds its event stream stays listed however long it is silent; once
// the stream ends without DELETE (the client vanished) it leaves the
// roster after StreamGone, counted as gone, rather than after the 30 idle
// minutes it took before.
func TestAnHTTPClientWhoseStreamEndsLeavesTheRosterAfterStreamGone(t *testing.T) {
	w := newWorld(t)
	w.srv.streamGone, w.srv.quiet = 200*time.Millisecond, time.Hour
	drops := countDrops(w)
	url := httpWorld(t, w)
	sid := open(t, url, true).session
	end := stream(t, url, sid)
	testutil.Eventually(t, "flood in the roster", func() bool { return w.listed("flood") })
	time.Sleep(5 * w.srv.streamGone) // silent, but its stream is open
	if !w.listed("flood") {
		t.Fatal("a client holding its event stream left the roster")
	}
	end()
	testutil.EventuallyWithin(t, 5*time.Second, "flood out of the roster", func() bool { return !w.listed("flood") })
	if r := post(t, url, sid, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)); r.status != http.StatusNotFound {
		t.Errorf("the gone session: %d %s", r.status, r.raw)
	}
	if n := drops(DropGone); n != 1 {
		t.Errorf("%d counted gone, want 1", n)
	}
	testutil.Eventually(t, "its slot freed", func() bool { return w.srv.Open() == 0 })
}

// TestAnHTTPClientWithoutAStreamLeavesAfterQuiet: a client that never
// opened an event stream is gone once it has had no request under way for
// Quiet; one blocked in wait_for_messages meanwhile is not, and a stream
// reopened within StreamGone keeps its session.
func TestAnHTTPClientWithoutAStreamLeavesAfterQuiet(t *testing.T) {
	w := newWorld(t)
	w.srv.streamGone, w.srv.quiet = 300*time.Millisecond, 300*time.Millisecond
	drops := countDrops(w)
	url := httpWorld(t, w)
	silent := open(t, url, true).session
	waiting := open(t, url, true).session
	reconnecting := open(t, url, true).session
	stream(t, url, reconnecting)()
	stream(t, url, reconnecting) // back at once, as the SDKs do
	done := make(chan rpc, 1)
	go func() {
		defer close(done) // also when post fails the test and ends this goroutine: no wait forever below
		done <- post(t, url, waiting, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait_for_messages","arguments":{"timeout_seconds":2}}}`))
	}()
	testutil.EventuallyWithin(t, 5*time.Second, "the silent session gone", func() bool { return drops(DropGone) >= 1 })
	if r := post(t, url, silent, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)); r.status != http.StatusNotFound {
		t.Errorf("the silent session after Quiet: %d %s", r.status, r.raw)
	}
	if r, ok := <-done; !ok {
		t.Error("the wait outlasting Quiet got no answer (see above)")
	} else if r.Error != nil || len(r.Result) == 0 {
		t.Errorf("the wait outlasting Quiet: %d %s", r.status, r.raw)
	}
	if r := post(t, url, reconnecting, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)); r.Error != nil || len(r.Result) == 0 {
		t.Errorf("a session whose stream came back: %d %s", r.status, r.raw)
	}
	if n := drops(DropGone); n != 1 {
		t.Errorf("%d counted gone, want 1 (the silent one)", n)
	}
}
