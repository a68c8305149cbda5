package uds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
)

// served is a listener running in the background for one test.
type served struct {
	*Listener
	cancel context.CancelFunc
	done   chan error
}

// serve starts Serve with h and stops it at cleanup (or earlier via stop).
func serve(t *testing.T, path string, lim Limits, h Handler) *served {
	t.Helper()
	l, err := Listen(path, lim)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{Listener: l, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- l.Serve(ctx, h) }()
	t.Cleanup(func() { _ = s.stop() })
	return s
}

func (s *served) stop() error {
	s.cancel()
	err, ok := <-s.done
	if ok {
		close(s.done)
	}
	return err
}

func dialT(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// lineResult is what a handler saw: every line, then the error that ended it.
type lineResult struct {
	lines []string
	err   error
}

// recordLines is a handler that reads until an error and reports everything.
// It then holds on until shutdown, so any close the client sees was done by
// ReadLine, not by Serve after the handler returned.
func recordLines(out chan<- lineResult) Handler {
	return func(ctx context.Context, c *Conn) {
		var r lineResult
		for {
			line, err := c.ReadLine()
			if err != nil {
				r.err = err
				break
			}
			r.lines = append(r.lines, string(line))
		}
		out <- r
		<-ctx.Done()
	}
}

// assertClosedByServer fails unless a read on c ends because the server
// closed the connection (EOF or reset), rather than by our own deadline.
func assertClosedByServer(t *testing.T, c *net.UnixConn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, 64)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue // drain what the server had not read
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("the server kept the connection open")
		}
		return
	}
}

func TestReadLine(t *testing.T) {
	const max = 16
	long := strings.Repeat("x", 10_000)
	tests := []struct {
		name    string
		maxLine int
		send    string
		want    []string
		wantErr error
	}{
		{"lines arrive without their newline, then a clean end is io.EOF", max, "a\nbb\n", []string{"a", "bb"}, io.EOF},
		{"an empty line is an empty line, not the end", max, "\n\nz\n", []string{"", "", "z"}, io.EOF},
		{"a final line without a newline is returned before io.EOF", max, "a\ntail", []string{"a", "tail"}, io.EOF},
		{"a line of exactly MaxLine bytes is accepted", max, strings.Repeat("y", max) + "\n", []string{strings.Repeat("y", max)}, io.EOF},
		{"a line one byte over MaxLine is refused", max, "ok\n" + strings.Repeat("y", max+1) + "\n", []string{"ok"}, ErrLineTooLong},
		{"an unterminated final line over MaxLine is refused", max, strings.Repeat("y", max+1), nil, ErrLineTooLong},
		{"a line longer than the read buffer is assembled whole", 1 << 20, long + "\nafter\n", []string{long, "after"}, io.EOF},
		{"a carriage return is kept for the parser to judge", max, "a\r\n", []string{"a\r"}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := make(chan lineResult, 1)
			s := serve(t, filepath.Join(testutil.ShortTempDir(t), "l.sock"), Limits{MaxLine: tt.maxLine}, recordLines(out))
			c := dialT(t, s.Path())
			if _, err := io.WriteString(c, tt.send); err != nil {
				t.Fatal(err)
			}
			_ = c.CloseWrite()
			r := <-out
			if !errors.Is(r.err, tt.wantErr) {
				t.Errorf("ended with %v, want %v", r.err, tt.wantErr)
			}
			if strings.Join(r.lines, "|") != strings.Join(tt.want, "|") || len(r.lines) != len(tt.want) {
				t.Errorf("lines = %q, want %q", r.lines, tt.want)
			}
		})
	}
}

func TestLineTooLong(t *testing.T) {
	t.Run("an over-long line closes the connection before its newline arrives", func(t *testing.T) {
		out := make(chan lineResult, 1)
		// Long timeouts: if the cap waited for a newline, this would end in
		// ErrTimeout (after a minute), not ErrLineTooLong.
		lim := Limits{MaxLine: 16, FirstLineTimeout: time.Minute, LineTimeout: time.Minute}
		s := serve(t, filepath.Join(testutil.ShortTempDir(t), "l.sock"), lim, recordLines(out))
		c := dialT(t, s.Path())
		if _, err := io.WriteString(c, strings.Repeat("z", 17)); err != nil {
			t.Fatal(err)
		}
		r := <-out
		if !errors.Is(r.err, ErrLineTooLong) {
			t.Fatalf("ended with %v, want ErrLineTooLong", r.err)
		}
		assertClosedByServer(t, c)
		if got := s.Stats().LineTooLong; got != 1 {
			t.Errorf("Stats().LineTooLong = %d, want 1", got)
		}
	})
}

func TestLineTimeouts(t *testing.T) {
	const short = 50 * time.Millisecond
	tests := []struct {
		name  string
		lim   Limits
		write func(c *net.UnixConn)
		want  []string
	}{
		{
			"a first line that never completes is cut at FirstLineTimeout",
			Limits{FirstLineTimeout: short, LineTimeout: time.Minute},
			func(c *net.UnixConn) { _, _ = io.WriteString(c, "partial") },
			nil,
		},
		{
			"a client trickling bytes cannot stretch the first line past its deadline",
			Limits{FirstLineTimeout: short, LineTimeout: time.Minute},
			func(c *net.UnixConn) {
				for range 100 {
					if _, err := io.WriteString(c, "x"); err != nil {
						return
					}
					time.Sleep(short / 5)
				}
			},
			nil,
		},
		{
			"silence after a line is cut at LineTimeout",
			Limits{FirstLineTimeout: time.Minute, LineTimeout: short},
			func(c *net.UnixConn) { _, _ = io.WriteString(c, "hello\n") },
			[]string{"hello"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := make(chan lineResult, 1)
			s := serve(t, filepath.Join(testutil.ShortTempDir(t), "t.sock"), tt.lim, recordLines(out))
			c := dialT(t, s.Path())
			tt.write(c) // the connection stays open: only the timeout can end it
			r := <-out
			if !errors.Is(r.err, ErrTimeout) {
				t.Fatalf("ended with %v, want ErrTimeout", r.err)
			}
			if strings.Join(r.lines, "|") != strings.Join(tt.want, "|") {
				t.Errorf("lines = %q, want %q", r.lines, tt.want)
			}
			assertClosedByServer(t, c)
			if got := s.Stats().Timeouts; got != 1 {
				t.Errorf("Stats().Timeouts = %d, want 1", got)
			}
		})
	}
}

func TestMaxConns(t *testing.T) {
	t.Run("a dial over MaxConns is not accepted until a slot frees, and its line is then read", func(t *testing.T) {
		const max = 4
		started := make(chan *Conn, max+2)
		lines := make(chan string, max+2)
		h := func(ctx context.Context, c *Conn) {
			started <- c
			line, _ := c.ReadLine() // holds the slot until the client writes or closes
			lines <- string(line)
		}
		lim := Limits{FirstLineTimeout: time.Minute, MaxConns: max, MaxConnsPerPeer: max}
		s := serve(t, filepath.Join(testutil.ShortTempDir(t), "m.sock"), lim, h)

		held := make([]*net.UnixConn, max)
		for i := range held {
			held[i] = dialT(t, s.Path())
			<-started // accepted and counted before the next dial
		}
		// The kernel takes the dial and the write into its backlog; before
		// the fix the listener accepted it and closed it unread, so the
		// write "succeeded" and was lost.
		extra := dialT(t, s.Path())
		if _, err := extra.Write([]byte("late\n")); err != nil {
			t.Fatalf("write to a full listener: %v", err)
		}
		select {
		case <-started:
			t.Fatal("a connection over MaxConns was accepted")
		case <-time.After(50 * time.Millisecond):
		}
		if st := s.Stats(); st.Accepted != max || st.Rejected != 0 {
			t.Fatalf("Stats() = %+v, want %d accepted and none rejected", st, max)
		}
		_ = held[0].Close()
		if got := <-lines; got != "" {
			t.Fatalf("the closed connection read %q", got)
		}
		<-started
		if got := <-lines; got != "late" {
			t.Fatalf("the waiting connection read %q, want its line", got)
		}
	})
	t.Run("over MaxConnsPerPeer a connection waits its turn, and past as many waiting one is closed", func(t *testing.T) {
		started := make(chan *Conn, 8)
		lines := make(chan string, 8)
		h := func(ctx context.Context, c *Conn) {
			started <- c
			line, _ := c.ReadLine()
			lines <- string(line)
		}
		lim := Limits{FirstLineTimeout: time.Minute, MaxConnsPerPeer: 2}
		s := serve(t, filepath.Join(testutil.ShortTempDir(t), "p.sock"), lim, h)
		var served []*net.UnixConn
		for range 2 {
			served = append(served, dialT(t, s.Path()))
			<-started
		}
		var waiting []*net.UnixConn
		for i := range 2 {
			c := dialT(t, s.Path())
			if _, err := fmt.Fprintf(c, "waited %d\n", i); err != nil {
				t.Fatal(err)
			}
			waiting = append(waiting, c)
		}
		testutil.Eventually(t, "two connections waiting", func() bool { return s.Stats().Waited == 2 })
		extra := dialT(t, s.Path())
		_ = extra.SetReadDeadline(time.Now().Add(time.Minute))
		if n, err := extra.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("connection 5 of one process: read = %d, %v; want io.EOF from a server-side close", n, err)
		}
		if st := s.Stats(); st.Accepted != 2 || st.Rejected != 1 || st.PeerLimited != 1 {
			t.Fatalf("Stats() = %+v, want 2 accepted, 2 waiting and 1 rejected over the per-peer limit", st)
		}
		select {
		case <-started:
			t.Fatal("a waiting connection was served while its peer held both its slots")
		case <-time.After(50 * time.Millisecond):
		}
		// One slot frees: the waiting connections are served in it in turn,
		// each as the one before it ends.
		_ = served[0].Close()
		for _, want := range []string{"", "waited 0", "waited 1"} {
			if got := <-lines; got != want {
				t.Fatalf("read %q, want %q, in that order", got, want)
			}
		}
		for _, c := range waiting {
			_ = c.Close()
		}
	})
}

func TestMaxConnAge(t *testing.T) {
	// A peer completing a line every 20 ms re-arms RearmEachLine's deadline
	// for ever; MaxConnAge closes the connection anyway.
	got := make(chan lineResult, 1)
	lim := Limits{FirstLineTimeout: time.Minute, LineTimeout: time.Minute, MaxConnAge: 300 * time.Millisecond}
	s := serve(t, filepath.Join(testutil.ShortTempDir(t), "a.sock"), lim, recordLines(got))
	c := dialT(t, s.Path())
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			if _, err := c.Write([]byte("x\n")); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	select {
	case r := <-got:
		if !errors.Is(r.err, ErrTimeout) || len(r.lines) == 0 {
			t.Fatalf("after %d lines: %v, want ErrTimeout", len(r.lines), r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a connection re-arming its deadline outlived MaxConnAge")
	}
	if st := s.Stats(); st.Timeouts != 1 {
		t.Fatalf("Stats() = %+v, want 1 timeout", st)
	}
}

func TestServeShutdown(t *testing.T) {
	t.Run("cancelling ctx unblocks handlers, waits for them and removes the socket", func(t *testing.T) {
		type seen struct {
			readErr error
			ctxErr  error
		}
		out := make(chan seen, 2)
		ready := make(chan struct{}, 2)
		h := func(ctx context.Context, c *Conn) {
			ready <- struct{}{}
			_, err := c.ReadLine()
			out <- seen{readErr: err, ctxErr: ctx.Err()}
		}
		s := serve(t, filepath.Join(testutil.ShortTempDir(t), "s.sock"), Limits{FirstLineTimeout: time.Hour}, h)
		dialT(t, s.Path())
		dialT(t, s.Path())
		<-ready
		<-ready

		if err := s.stop(); err != nil {
			t.Fatalf("Serve returned %v, want nil after cancel", err)
		}
		// Serve waited for both handlers, so both results are already here.
		for range 2 {
			select {
			case r := <-out:
				if !errors.Is(r.readErr, context.Canceled) || !errors.Is(r.ctxErr, context.Canceled) {
					t.Errorf("handler saw ReadLine %v and ctx %v, want both cancelled", r.readErr, r.ctxErr)
				}
			default:
				t.Fatal("Serve returned before a handler finished")
			}
		}
		if _, err := os.Lstat(s.Path()); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("socket file after Serve: %v, want it removed", err)
		}
		if st := s.Stats(); st.Timeouts != 0 {
			t.Errorf("shutdown counted as %d timeouts", st.Timeouts)
		}
	})

	t.Run("a socket file replaced by someone else is left in place", func(t *testing.T) {
		s := serve(t, filepath.Join(testutil.ShortTempDir(t), "s.sock"), Limits{}, func(context.Context, *Conn) {})
		if err := os.Remove(s.Path()); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.Path(), []byte("successor"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := s.stop(); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		if b, err := os.ReadFile(s.Path()); err != nil || string(b) != "successor" {
			t.Errorf("successor's file = %q, %v; want it untouched", b, err)
		}
	})

	t.Run("Serve cannot run twice on one listener", func(t *testing.T) {
		l, err := Listen(filepath.Join(testutil.ShortTempDir(t), "s.sock"), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		nop := func(context.Context, *Conn) {}
		if err := l.Serve(ctx, nop); err != nil {
			t.Fatalf("first Serve: %v", err)
		}
		if err := l.Serve(ctx, nop); err == nil {
			t.Error("second Serve returned nil")
		}
	})

	t.Run("a listener that is closed without serving removes its socket", func(t *testing.T) {
		l, err := Listen(filepath.Join(testutil.ShortTempDir(t), "c.sock"), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := os.Lstat(l.Path()); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("socket file after Close: %v, want it removed", err)
		}
	})
}

func TestPeerCred(t *testing.T) {
	t.Run("a connection from this process carries our pid, uid and gid", func(t *testing.T) {
		got := make(chan Cred, 1)
		s := serve(t, filepath.Join(testutil.ShortTempDir(t), "p.sock"), Limits{}, func(_ context.Context, c *Conn) { got <- c.Cred })
		c := dialT(t, s.Path())
		want := Cred{PID: os.Getpid(), UID: os.Geteuid(), GID: os.Getegid()}
		if cred := <-got; cred != want {
			t.Errorf("server saw %+v, want %+v", cred, want)
		}
		// Seen from the dialing side, the peer is the listener: us again.
		if cred, err := PeerCred(c); err != nil || cred != want {
			t.Errorf("PeerCred(client) = %+v, %v; want %+v", cred, err, want)
		}
	})
}

// staleSocket leaves a socket file that nobody listens on.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	_ = ln.Close()
}

// liveSocket listens at path until the test ends.
func liveSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
}

// busySocket listens at path with a backlog of zero and fills it, so a
// further connect fails with EAGAIN although the listener is alive.
func busySocket(t *testing.T, path string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.CloseOnExec(fd)
	t.Cleanup(func() { _ = unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		cfd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Close(cfd) })
		unix.CloseOnExec(cfd)
		if err := unix.SetNonblock(cfd, true); err != nil {
			t.Fatal(err)
		}
		err = unix.Connect(cfd, &unix.SockaddrUnix{Name: path})
		if errors.Is(err, unix.EAGAIN) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("backlog never filled")
}

func TestListenExistingPath(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		wantErr error // nil: Listen succeeds
		kept    bool  // the thing at path must survive a refusal
	}{
		{"a free path is bound", func(*testing.T, string) {}, nil, false},
		{"a stale socket is replaced", staleSocket, nil, false},
		{"a live socket is refused as in use", liveSocket, ErrInUse, true},
		{"a live socket with a full backlog is in use, not stale", busySocket, ErrInUse, true},
		{"a regular file is refused", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, ErrNotSocket, true},
		{"a symlink is refused even if it points at a stale socket", func(t *testing.T, p string) {
			staleSocket(t, p+".target")
			if err := os.Symlink(p+".target", p); err != nil {
				t.Fatal(err)
			}
		}, safefile.ErrSymlink, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(testutil.ShortTempDir(t), "x.sock")
			tt.prepare(t, path)
			before, _ := os.Lstat(path)
			l, err := Listen(path, Limits{})
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Listen: %v", err)
				}
				defer l.Close()
				fi, err := os.Lstat(path)
				if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
					t.Fatalf("socket file = %v, %v; want a 0600 socket", fi.Mode(), err)
				}
				if err := Probe(context.Background(), path); err != nil {
					t.Errorf("Probe of our listener: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Listen = %v, want %v", err, tt.wantErr)
			}
			if after, err := os.Lstat(path); tt.kept && (err != nil || !os.SameFile(before, after)) {
				t.Errorf("the existing file was disturbed: %v", err)
			}
		})
	}
}

func TestListenPathChecks(t *testing.T) {
	tests := []struct {
		name  string
		path  func(t *testing.T) string
		check func(error) bool
	}{
		{"a path over 107 bytes is a PathTooLongError", func(t *testing.T) string {
			return "/tmp/" + strings.Repeat("p", MaxPathLen-9) + ".sock"
		}, func(err error) bool { var e *PathTooLongError; return errors.As(err, &e) }},
		{"a parent directory open to others is refused", func(t *testing.T) string {
			d := testutil.ShortTempDir(t)
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(d, "a.sock")
		}, func(err error) bool { return errors.Is(err, safefile.ErrLooseMode) }},
		{"a missing parent directory is refused", func(t *testing.T) string {
			return filepath.Join(testutil.ShortTempDir(t), "missing", "a.sock")
		}, func(err error) bool { return errors.Is(err, fs.ErrNotExist) }},
		{"a symlinked parent directory is refused", func(t *testing.T) string {
			d := testutil.ShortTempDir(t)
			if err := os.Symlink(d, d+"-link"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Remove(d + "-link") })
			return filepath.Join(d+"-link", "a.sock")
		}, func(err error) bool { return errors.Is(err, safefile.ErrSymlink) }},
		{"an abstract socket name is refused", func(t *testing.T) string { return "@gateway" }, func(err error) bool { return err != nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Listen(tt.path(t), Limits{})
			if err == nil {
				_ = l.Close()
			}
			if !tt.check(err) {
				t.Errorf("Listen = %v", err)
			}
		})
	}
	t.Run("a path of exactly 107 bytes is accepted", func(t *testing.T) {
		d := testutil.ShortTempDir(t)
		p := filepath.Join(d, strings.Repeat("q", MaxPathLen-len(d)-1))
		if len(p) != MaxPathLen {
			t.Fatalf("built a %d-byte path", len(p))
		}
		l, err := Listen(p, Limits{})
		if err != nil {
			t.Fatalf("Listen: %v", err)
		}
		_ = l.Close()
	})
}
