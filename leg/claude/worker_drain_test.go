package claude

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
)

// The loss: a worker told to stop chose at random between writing what its
// peer had accepted and returning, so messages accepted just before a
// stop never reached the gateway (and their senders had no receipt).
func TestAWorkerToldToStopFirstWritesWhatItAccepted(t *testing.T) {
	parent, child := net.Pipe() // a write waits for its read: the test holds the worker's writes back
	t.Cleanup(func() { parent.Close(); child.Close() })
	cfg := Config{Name: "w", RuntimeDir: testutil.ShortTempDir(t), ConfigDir: t.TempDir()}
	done := make(chan error, 1)
	go func() { done <- RunWorker(context.Background(), cfg, child) }()
	go func() { // a worker that cannot register says so here, not ready
		if err := <-done; err != nil {
			t.Errorf("RunWorker: %v", err)
			parent.Close()
		}
		done <- nil
	}()
	lines := bufio.NewScanner(parent)
	var ready WorkerOp
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &ready) != nil || ready.Op != OpReady {
		t.Fatalf("first line %q, want ready", lines.Text())
	}
	sock := strings.TrimPrefix(ready.Address, "uds:")
	sender := listenSock(t, filepath.Dir(sock)) // beside the worker's: a reply address it accepts
	want := map[string]bool{}
	for range 8 {
		id, b := sender.userFrame(t, "prompting", "accepted before the stop "+time.Now().String())
		dial(t, sock, b)
		want[id] = true
	}
	// Let the peer accept them all while the worker's first write waits.
	time.Sleep(300 * time.Millisecond)
	stop, _ := json.Marshal(WorkerOp{Op: OpStop})
	if _, err := parent.Write(append(stop, '\n')); err != nil {
		t.Fatal(err)
	}
	// The peer stops (its socket goes) while the worker's write still waits.
	if !testutil.Within(testutil.Patience, func() bool { _, err := os.Stat(sock); return err != nil }) {
		t.Fatal("the worker's peer did not stop")
	}
	time.Sleep(50 * time.Millisecond) // and its Run returns
	got := make(chan map[string]bool, 1)
	go func() {
		seen := map[string]bool{}
		for lines.Scan() {
			var op WorkerOp
			if json.Unmarshal(lines.Bytes(), &op) == nil && op.Op == OpEvent {
				if m := op.Event.Message; m != nil {
					seen[m.ID] = true
				}
				if d := op.Event.Drop; d != nil {
					seen[d.MsgID] = true
				}
			}
		}
		got <- seen
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	child.Close()
	seen := <-got
	for id := range want {
		if !seen[id] {
			t.Fatalf("worker wrote %d of %d messages accepted before the stop", len(seen), len(want))
		}
	}
}
