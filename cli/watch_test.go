package cli

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// lockedBuffer is a bytes.Buffer the watch writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestWatchSaysOnStderrThatEventsWereForgotten(t *testing.T) {
	dir, err := os.MkdirTemp("", "gw") // short: a socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	rt := router.New(router.Config{KeepEvents: 2})
	for range 5 {
		rt.Hub().Publish(message.Event{Type: message.EventIdle, Idle: &message.IdleNotice{Peer: "uds:/tmp/p.sock", State: "idle"}})
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "gateway.sock"))
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: api.NewServer(api.Config{Router: rt}).Handler()}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })

	var stdout, stderr lockedBuffer
	o := &IO{Stdout: &stdout, Stderr: &stderr, StateDir: dir, DefaultStateDir: dir, JSON: true}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, o, 1) }()
	testutil.Eventually(t, "the kept events printed", func() bool { return strings.Count(stdout.String(), "\n") == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "events after 1 were forgotten") || strings.Contains(stdout.String(), "gap") {
		t.Fatalf("stderr %q, stdout %q: want the gap on stderr only", stderr.String(), stdout.String())
	}
}
