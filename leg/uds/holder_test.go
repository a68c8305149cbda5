package uds

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
)

func next(t *testing.T, counts <-chan int64) int64 {
	t.Helper()
	select {
	case n := <-counts:
		return n
	case <-time.After(10 * time.Second): // a hang detector
		t.Fatal("the listener process reported no connection")
		return 0
	}
}

func TestDialWriteHeldWritesOnlyToTheNamedListener(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peer credentials of a listener are read on Linux")
	}
	path := filepath.Join(testutil.ShortTempDir(t), "other.sock")
	pid, counts := testutil.CountingListener(t, helperEnv+"=listen:"+path)
	secret := []byte(`{"type":"auth","token":"secret"}` + "\n")

	t.Run("a record naming another pid gets nothing written", func(t *testing.T) {
		err := DialWriteHeld(context.Background(), path, Holder{PID: os.Getpid()}, secret)
		var he *HolderError
		if !errors.Is(err, ErrNotHolder) || !errors.As(err, &he) || he.Got.PID != pid {
			t.Fatalf("DialWriteHeld = %v, want a HolderError naming pid %d", err, pid)
		}
		if n := next(t, counts); n != 0 {
			t.Fatalf("the listener read %d bytes, want 0", n)
		}
	})
	t.Run("a record naming our namespace by inode and another pid gets nothing", func(t *testing.T) {
		err := DialWriteHeld(context.Background(), path, Holder{PID: pid + 1, PidNS: ourPidNS()}, secret)
		if !errors.Is(err, ErrNotHolder) {
			t.Fatalf("DialWriteHeld = %v, want ErrNotHolder", err)
		}
		if n := next(t, counts); n != 0 {
			t.Fatalf("the listener read %d bytes, want 0", n)
		}
	})
	t.Run("a record of another namespace whose listener lives in ours gets nothing", func(t *testing.T) {
		err := ProbeHeld(context.Background(), path, Holder{PID: pid, PidNS: ourPidNS() + 1})
		if !errors.Is(err, ErrNotHolder) {
			t.Fatalf("ProbeHeld = %v, want ErrNotHolder", err)
		}
		next(t, counts)
	})
	t.Run("the listener's own pid is written to", func(t *testing.T) {
		if err := DialWriteHeld(context.Background(), path, Holder{PID: pid}, secret); err != nil {
			t.Fatal(err)
		}
		if n := next(t, counts); n != int64(len(secret)) {
			t.Fatalf("the listener read %d bytes, want %d", n, len(secret))
		}
		if err := ProbeHeld(context.Background(), path, Holder{PID: pid, PidNS: ourPidNS()}); err != nil {
			t.Fatal(err)
		}
		next(t, counts)
	})
	t.Run("no pid accepts any listener of our uid", func(t *testing.T) {
		if err := ProbeHeld(context.Background(), path, Holder{}); err != nil {
			t.Fatal(err)
		}
		next(t, counts)
	})
}

func TestParseNSpid(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"Name:\tx\nNSpid:\t42\n", 42, true},
		{"NSpid:\t4242\t7\t1\nPPid:\t1\n", 1, true},
		{"Name:\tx\n", 0, false},
		{"NSpid:\n", 0, false},
		{"NSpid:\tx\n", 0, false},
	}
	for _, tt := range tests {
		got, err := parseNSpid([]byte(tt.in))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseNSpid(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
