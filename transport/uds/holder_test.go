package uds

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
)

// runListener is the child side of listenerProcess: it listens at path,
// says "ready", then reports how many bytes each connection brought, one
// line per connection, until its stdin closes.
func runListener(path string) int {
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		fmt.Println(n)
	}
}

// listenerProcess starts a second process listening at path and returns
// its pid and the byte counts of the connections it accepts.
func listenerProcess(t *testing.T, path string) (pid int, counts <-chan int64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=listen:"+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := make(chan int64, 16)
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the listener process did not start: %q", sc.Text())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sc.Scan() {
			n, _ := strconv.ParseInt(sc.Text(), 10, 64)
			out <- n
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
		<-done
	})
	return cmd.Process.Pid, out
}

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
	pid, counts := listenerProcess(t, path)
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
