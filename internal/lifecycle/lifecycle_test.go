package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func TestRunStopsInOrder(t *testing.T) {
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	var queued atomic.Int32
	queued.Store(3)
	ctx, stop := context.WithCancel(context.Background())
	ln := listen(t)
	errc := make(chan error, 1)
	go func() {
		errc <- Run(ctx, Parts{
			Log: slog.New(slog.DiscardHandler), Grace: 5 * time.Second,
			Core:    func(ctx context.Context) error { <-ctx.Done(); note("core"); return nil },
			Servers: []*http.Server{{Handler: http.NotFoundHandler()}}, Listeners: []net.Listener{ln},
			EndStreams: func() { note("streams") },
			BeforeCore: func() { note("feeders") },
			Pending: func() int {
				n := queued.Add(-1)
				if n <= 0 {
					note("flushed")
					return 0
				}
				return int(n)
			},
		})
	}()
	time.Sleep(20 * time.Millisecond)
	stop()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	if got := strings.Join(order, ","); got != "streams,flushed,feeders,core" {
		t.Fatalf("stopped in the order %s, want streams, flushed, feeders (alias workers), core", got)
	}
}

func TestRunGivesUpAfterGrace(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	stop()
	hung := make(chan struct{})
	defer close(hung)
	start := time.Now()
	err := Run(ctx, Parts{Log: slog.New(slog.DiscardHandler), Grace: 100 * time.Millisecond,
		Core: func(context.Context) error { <-hung; return nil }})
	if !errors.Is(err, ErrGraceExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("Run = %v after %v, want ErrGraceExceeded soon after the grace", err, time.Since(start))
	}
}

func TestRunEndsWhenTheCoreFails(t *testing.T) {
	boom := errors.New("boom")
	err := Run(context.Background(), Parts{Log: slog.New(slog.DiscardHandler), Grace: time.Second,
		Core: func(context.Context) error { return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want the core's error", err)
	}
}

func TestReloadOnLogsEachReloader(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	hup := make(chan os.Signal, 1)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	rs := []Reloader{
		{What: "good", Reload: func() (string, string, error) { return "v2", "", nil }},
		{What: "pinned", Reload: func() (string, string, error) { return "unchanged", "set by --pin", nil }},
		{What: "bad", Reload: func() (string, string, error) { stop(); return "", "", errors.New("nope") }},
	}
	go func() { defer close(done); ReloadOn(ctx, log, hup, rs) }()
	hup <- os.Interrupt
	<-done
	out := buf.String()
	for _, want := range []string{"what=good now=v2\n", `what=pinned now=unchanged reason="set by --pin"`, "reload failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the log:\n%s", want, out)
		}
	}
}
