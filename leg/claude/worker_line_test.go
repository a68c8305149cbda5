package claude

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// workerPair runs RunWorker(cfg) in this process on one end of a socket
// pair and the pool's reader on the other, as the gateway does with a
// worker process; events come out on the returned channel.
func workerPair(t *testing.T, cfg Config) (*worker, <-chan message.Event, string) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	parent, child := os.NewFile(uintptr(fds[0]), "parent"), os.NewFile(uintptr(fds[1]), "child")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := RunWorker(ctx, cfg, child); err != nil && ctx.Err() == nil {
			t.Errorf("RunWorker: %v", err)
		}
	}()
	events := make(chan message.Event, 16)
	p := NewAliasPool(PoolConfig{Events: func(_ string, ev message.Event) { events <- ev }})
	w := &worker{ready: make(chan struct{}), exited: make(chan struct{}), sent: map[string]chan error{}, ctl: parent}
	read := make(chan struct{})
	go func() { defer close(read); p.read("w", w) }()
	t.Cleanup(func() {
		cancel()
		parent.Close()
		child.Close()
		<-done
		<-read
	})
	select {
	case <-w.ready:
	case <-time.After(testutil.Patience):
		t.Fatal("the worker did not say ready")
	}
	if w.startEr != nil {
		t.Fatal(w.startEr)
	}
	return w, events, strings.TrimPrefix(w.alias.Address, "uds:")
}

// The wedge: a worker wrote events with HTML escaping, so a user frame of
// a million '<' (under the 1 MiB line cap) became a 6 MB event line, past
// the gateway's reader cap; the reader stopped, the worker blocked on its
// write for good, and every later message to the alias was lost.
func TestAnAliasPassesAFrameOfCharactersJSONWouldEscape(t *testing.T) {
	cfg := Config{Name: "w", RuntimeDir: testutil.ShortTempDir(t), ConfigDir: t.TempDir(), Mode: message.ModePrompting}
	_, events, sock := workerPair(t, cfg)
	sender := listenSock(t, filepath.Dir(sock))
	for _, body := range []string{strings.Repeat("<", 1_000_000), strings.Repeat("\u2028", 330_000), "after"} {
		id, b := sender.userFrame(t, "prompting", body)
		// As a hostile peer may write it: U+2028 raw (3 bytes), which the
		// event's JSON escapes (6).
		b = bytes.ReplaceAll(b, []byte(`\u2028`), []byte("\u2028"))
		dial(t, sock, b)
		deadline := time.After(5 * time.Second)
	wait:
		for {
			select {
			case ev := <-events:
				if ev.Message != nil && ev.Message.ID == id {
					if ev.Message.Body != body {
						t.Fatalf("body of %d bytes came through as %d", len(body), len(ev.Message.Body))
					}
					break wait
				}
			case <-deadline:
				t.Fatalf("message of %d bytes did not reach the gateway", len(body))
			}
		}
	}
}

// A worker whose line the pool cannot read was left running: blocked on
// its write, listed among the workers, never replaced. The pool ends it.
func TestAWorkerWritingALineTooLongIsEnded(t *testing.T) {
	p := NewAliasPool(PoolConfig{Command: func(string) *exec.Cmd {
		// Ready, then a line past maxWorkerLine on the control pipe.
		return exec.Command("sh", "-c", `echo '{"op":"ready","address":"uds:/nowhere"}' >&3
(head -c 5000000 /dev/zero | tr '\0' a >&3) & exec sleep 60`)
	}})
	t.Cleanup(p.Close)
	if _, err := p.Get(context.Background(), "long"); err != nil {
		t.Fatal(err)
	}
	if !testutil.Within(testutil.Patience, func() bool { return !p.has("long") }) {
		p.mu.Lock()
		_ = p.workers["long"].cmd.Process.Kill() // so the cleanup's Close ends
		p.mu.Unlock()
		t.Fatal("the unreadable worker still runs")
	}
}

// Neither side writes a line the other would refuse to read: the writer
// refuses it, and nothing is left half-written on the pipe.
func TestAnOpTooLongForTheWorkersPipeIsRefusedByItsWriter(t *testing.T) {
	tests := []struct {
		name string
		body string
		want error
	}{
		{"a body under the cap, of characters HTML escaping would grow six times", strings.Repeat("<", maxWorkerLine/2), nil},
		{"a body over the cap", strings.Repeat("a", maxWorkerLine), errOpTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := encodeOp(WorkerOp{Op: OpSend, Message: &message.Message{ID: "x", Body: tt.body}})
			if err != tt.want {
				t.Fatalf("encodeOp = %v, want %v", err, tt.want)
			}
			if err == nil && (len(b) > maxWorkerLine || b[len(b)-1] != '\n') {
				t.Fatalf("a line of %d bytes, cap %d", len(b), maxWorkerLine)
			}
		})
	}
}
