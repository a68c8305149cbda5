package lifecycle

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// notifySocket is a service manager's end of NOTIFY_SOCKET.
func notifySocket(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func readState(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 512)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no state sent: %v", err)
	}
	return string(buf[:n])
}

func TestRunTellsTheServiceManagerReadyThenStopping(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify")
	sm := notifySocket(t, path)
	ctx, stop := context.WithCancel(context.Background())
	ready := make(chan struct{})
	errc := make(chan error, 1)
	ln := listen(t) // here: a t.Fatal in the goroutine would leave errc empty
	go func() {
		errc <- Run(ctx, Parts{
			Log: slog.New(slog.DiscardHandler), Grace: 5 * time.Second,
			Core:    func(ctx context.Context) error { <-ctx.Done(); return nil },
			Servers: []*http.Server{{Handler: http.NotFoundHandler()}}, Listeners: []net.Listener{ln},
			Notify: SystemdNotify(path), Ready: func() { close(ready) },
		})
	}()
	if got := readState(t, sm); got != "READY=1" {
		t.Fatalf("first state %q, want READY=1", got)
	}
	<-ready
	stop()
	if got := readState(t, sm); got != "STOPPING=1" {
		t.Fatalf("state at the stop %q, want STOPPING=1", got)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestSystemdNotify(t *testing.T) {
	t.Run("an empty socket tells nobody", func(t *testing.T) {
		if SystemdNotify("") != nil {
			t.Fatal("a Notify without a socket")
		}
	})
	t.Run("an abstract socket name starts with @", func(t *testing.T) {
		name := "@gateway-test-" + filepath.Base(t.TempDir())
		sm := notifySocket(t, "\x00"+name[1:])
		if err := SystemdNotify(name)("READY=1"); err != nil {
			t.Fatal(err)
		}
		if got := readState(t, sm); got != "READY=1" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("a socket nobody listens on is an error, not a crash", func(t *testing.T) {
		if err := SystemdNotify(filepath.Join(t.TempDir(), "gone"))("READY=1"); err == nil {
			t.Fatal("no error")
		}
	})
}
