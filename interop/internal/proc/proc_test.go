package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTailBufferKeepsTheEnd(t *testing.T) {
	b := &TailBuffer{Max: 8}
	for _, s := range []string{"0123", "4567", "89ab"} {
		b.Write([]byte(s))
	}
	if got := b.String(); got != "456789ab" {
		t.Errorf("tail = %q, want 456789ab", got)
	}
}

var errNotFound = errors.New("test CLI not found")

func TestBin(t *testing.T) {
	cache := t.TempDir()
	installed := filepath.Join(cache, "tool", "bin", "tool")
	os.MkdirAll(filepath.Dir(installed), 0o700)
	if err := os.WriteFile(installed, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(cache, "plain")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		env     string // the override variable's value
		want    string
		wantErr string // "" for success
	}{
		{"finds the binary installed in the cache", "", installed, ""},
		{"prefers the override variable", installed, installed, ""},
		{"rejects a file that is not executable", plain, "", "is not an executable file"},
		{"rejects a directory", cache, "", "is not an executable file"},
		{"rejects a path that does not exist", filepath.Join(cache, "nope"), "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GATEWAY_INTEROP_CACHE", cache)
			t.Setenv("PROC_TEST_BIN", tt.env)
			got, err := Bin(errNotFound, "PROC_TEST_BIN", "tool", "bin", "tool")
			if tt.wantErr != "" {
				if !errors.Is(err, errNotFound) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Bin = %q, %v; want an error wrapping %v and saying %q", got, err, errNotFound, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Bin = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestCacheDirDefaultsUnderHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GATEWAY_INTEROP_CACHE", "")
	got, err := CacheDir()
	if want := filepath.Join(home, ".cache", "gateway-interop"); err != nil || got != want {
		t.Fatalf("CacheDir = %q, %v; want %q", got, err, want)
	}
}

// run starts argv and returns its pid and a channel closed once it is reaped.
func run(t *testing.T, argv ...string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	return cmd, done
}

func TestTerminate(t *testing.T) {
	t.Run("a process that obeys SIGTERM is not killed", func(t *testing.T) {
		cmd, done := run(t, "sleep", "60")
		killed := false
		if err := Terminate(cmd.Process.Pid, done, time.Hour, func() { killed = true }); err != nil || killed {
			t.Fatalf("Terminate = %v, killed %v; want nil, false", err, killed)
		}
	})
	t.Run("a process that ignores SIGTERM is killed and that is an error", func(t *testing.T) {
		// The shell says "ready" once its trap is set, so SIGTERM cannot
		// arrive before it.
		cmd := exec.Command("sh", "-c", `trap "" TERM; echo ready; exec sleep 60`)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 6)
		if _, err := out.Read(buf); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			cmd.Wait()
		}()
		killed := false
		err = Terminate(cmd.Process.Pid, done, 50*time.Millisecond, func() {
			killed = true
			cmd.Process.Kill()
		})
		if err == nil || !killed || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("Terminate = %v, killed %v; want an error saying it killed", err, killed)
		}
	})
}
