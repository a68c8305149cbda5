package testutil

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Patience is how long Eventually waits before it fails the test: long,
// since only a failing test waits it out, and CI's two loaded cores have
// taken more than 10 s for what takes milliseconds on a quiet machine.
const Patience = 30 * time.Second

// ShortTempDir returns a fresh private (0700) directory under /tmp, removed
// when the test ends, joined with the optional sub-path (made too). A Unix socket path
// must fit in about 104 bytes, which t.TempDir's long names do not leave
// room for.
func ShortTempDir(tb testing.TB, sub ...string) string {
	tb.Helper()
	d, err := os.MkdirTemp("/tmp", "gw")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(d) })
	if len(sub) > 0 {
		d = filepath.Join(append([]string{d}, sub...)...)
		if err := os.MkdirAll(d, 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	return d
}

// Eventually polls cond until it holds and fails the test when it still
// does not after Patience; what names the awaited condition.
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	EventuallyWithin(tb, Patience, what, cond)
}

// EventuallyWithin is Eventually with its own patience.
func EventuallyWithin(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Within(d, cond) {
		tb.Fatalf("timed out after %v waiting until %s", d, what)
	}
}

// Within polls cond until it holds, for at most d, and says whether it
// did: for a caller whose failure message shows what it saw instead.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// Context returns a context that ends after d or when the test does,
// whichever is first.
func Context(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// FreePort returns a loopback address, "127.0.0.1:port", whose port was
// free a moment ago: the listener that found it is closed before it
// returns, so another process may take it in between.
func FreePort(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// WriteFile writes body to path with exactly perm (os.WriteFile's mode is
// subject to the umask) and returns path.
func WriteFile(tb testing.TB, path string, body []byte, perm os.FileMode) string {
	tb.Helper()
	if err := os.WriteFile(path, body, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		tb.Fatal(err)
	}
	return path
}
