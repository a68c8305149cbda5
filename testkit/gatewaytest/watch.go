package gatewaytest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
)

// Watcher collects the events `gateway watch --json` prints.
type Watcher struct {
	mu      sync.Mutex
	events  []message.Event
	changed chan struct{}
}

// WatchCLI runs `gateway watch --json --since 0` until the test ends: --since
// 0 replays every kept event, so nothing that happened before the stream
// opened is missed.
func (g *Gateway) WatchCLI(t *testing.T) *Watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, Bin(t), "watch", "--json", "--since", "0")
	cmd.Env = g.Env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &Watcher{changed: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var ev message.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("watch --json printed a bad line %q: %v", sc.Text(), err)
				continue
			}
			w.mu.Lock()
			w.events = append(w.events, ev)
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(func() { cancel(); _ = cmd.Wait(); <-done })
	return w
}

// Find returns the first event so far that pred accepts, without waiting.
func (w *Watcher) Find(pred func(message.Event) bool) (message.Event, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ev := range w.events {
		if pred(ev) {
			return ev, true
		}
	}
	return message.Event{}, false
}

// Wait returns the first event pred accepts, waiting up to d for it.
func (w *Watcher) Wait(t *testing.T, d time.Duration, pred func(message.Event) bool) message.Event {
	t.Helper()
	timeout := time.After(d)
	for {
		w.mu.Lock()
		for _, ev := range w.events {
			if pred(ev) {
				w.mu.Unlock()
				return ev
			}
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			w.mu.Lock()
			defer w.mu.Unlock()
			t.Fatalf("no matching event within %v; saw %d events: %+v", d, len(w.events), w.events)
		}
	}
}
