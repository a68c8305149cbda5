package uds

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
)

// The caps the issue names: 1 MiB per line, 30 s to complete a first line,
// 64 concurrent connections, 8 of them per process, 2 min per connection.
func TestListenerDefaultsArePinned(t *testing.T) {
	tests := []struct {
		name      string
		got, want int64
	}{
		{"a line is capped at exactly 1 MiB", DefaultMaxLine, 1 << 20},
		{"the first line must be complete within exactly 30 s", int64(DefaultFirstLineTimeout), int64(30 * time.Second)},
		{"at most 64 connections are served at once", DefaultMaxConns, 64},
		{"at most 8 of them from one process", DefaultMaxConnsPerPeer, 8},
		{"a connection lives at most 2 min", int64(DefaultMaxConnAge), int64(2 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Fatalf("got %d, want %d", tt.got, tt.want)
			}
		})
	}
}

// defaultsListener serves h on a fresh socket with zero Limits, so every
// cap is the default, until the test ends.
func defaultsListener(t *testing.T, h Handler) *Listener {
	t.Helper()
	dir := testutil.ShortTempDir(t)
	l, err := Listen(filepath.Join(dir, "d.sock"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return l
}

type defaultsRead struct {
	n   int
	err error
}

func TestZeroLimitsCapALineAtOneMiB(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		wantErr error
	}{
		{"a line of exactly 1 MiB is read whole", 1 << 20, nil},
		{"a line of 1 MiB and one byte is refused", 1<<20 + 1, ErrLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan defaultsRead, 1)
			l := defaultsListener(t, func(_ context.Context, c *Conn) {
				line, err := c.ReadLine()
				got <- defaultsRead{len(line), err}
			})
			c, err := net.Dial("unix", l.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			go func() { _, _ = c.Write(append(bytes.Repeat([]byte("y"), tt.size), '\n')) }()
			r := <-got
			if tt.wantErr != nil {
				if !errors.Is(r.err, tt.wantErr) {
					t.Fatalf("ReadLine err = %v, want %v", r.err, tt.wantErr)
				}
				return
			}
			if r.err != nil || r.n != tt.size {
				t.Fatalf("ReadLine = %d bytes, %v; want %d bytes", r.n, r.err, tt.size)
			}
		})
	}
}

func TestZeroLimitsServe8ConnectionsOfOneProcessQueue8AndCloseThe17th(t *testing.T) {
	release := make(chan struct{})
	l := defaultsListener(t, func(ctx context.Context, c *Conn) {
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	defer close(release)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 16 {
		c, err := net.Dial("unix", l.Path())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	testutil.EventuallyWithin(t, 20*time.Second, "8 connections served, 8 waiting", func() bool { return l.Stats().Accepted == 8 && l.Stats().Waited == 8 })
	if s := l.Stats(); s.Rejected != 0 {
		t.Fatalf("rejected %d of the first 16", s.Rejected)
	}
	c, err := net.Dial("unix", l.Path())
	if err != nil {
		t.Fatal(err)
	}
	conns = append(conns, c)
	// The 17th from this process is closed by the server at once: our read
	// sees the end.
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the 17th connection: read err = %v, want EOF", err)
	}
	if s := l.Stats(); s.Rejected != 1 || s.PeerLimited != 1 || s.Accepted != 8 {
		t.Fatalf("stats = %+v, want 8 accepted and 1 rejected over the per-peer limit", s)
	}
}

// With zero Limits a silent first line is not cut off early: the default
// is 30 s, not zero. (Waiting out the 30 s is left to the constant's test.)
func TestZeroLimitsDoNotTimeOutAFirstLineAtOnce(t *testing.T) {
	got := make(chan defaultsRead, 1)
	l := defaultsListener(t, func(_ context.Context, c *Conn) {
		line, err := c.ReadLine()
		got <- defaultsRead{len(line), err}
	})
	c, err := net.Dial("unix", l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(300 * time.Millisecond) // silent for a while, then the line
	if _, err := c.Write([]byte("late but in time\n")); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.err != nil || r.n != len("late but in time") {
		t.Fatalf("ReadLine = %d bytes, %v", r.n, r.err)
	}
	if s := l.Stats(); s.Timeouts != 0 {
		t.Fatalf("timeouts = %d", s.Timeouts)
	}
}
