package uds

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
)

func TestDialWrite(t *testing.T) {
	t.Run("the payload arrives whole and the peer then sees our half-close as EOF", func(t *testing.T) {
		out := make(chan lineResult, 1)
		s := serve(t, filepath.Join(testutil.ShortTempDir(t), "d.sock"), Limits{}, recordLines(out))
		payload := `{"type":"auth","token":"t"}` + "\n" + `{"type":"user"}` + "\n"
		if err := DialWrite(context.Background(), s.Path(), []byte(payload)); err != nil {
			t.Fatalf("DialWrite: %v", err)
		}
		r := <-out
		if !errors.Is(r.err, io.EOF) || strings.Join(r.lines, "\n")+"\n" != payload {
			t.Errorf("peer saw %q then %v, want the payload then io.EOF", r.lines, r.err)
		}
	})

	t.Run("a peer that never closes does not hold the writer", func(t *testing.T) {
		release := make(chan struct{})
		s := serve(t, filepath.Join(testutil.ShortTempDir(t), "d.sock"), Limits{}, func(ctx context.Context, c *Conn) {
			select { // reads nothing, closes nothing, until the test is over
			case <-release:
			case <-ctx.Done():
			}
		})
		defer close(release)
		// The ctx is far longer than the linger: success means the linger,
		// not the ctx, ended the wait.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := DialWrite(ctx, s.Path(), []byte("x\n")); err != nil {
			t.Fatalf("DialWrite: %v", err)
		}
	})

	t.Run("a listener that closes with the payload unread is ErrUnread, not a success", func(t *testing.T) {
		path := filepath.Join(testutil.ShortTempDir(t), "d.sock")
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			time.Sleep(30 * time.Millisecond) // the writer has written by now, within its linger
			c.Close()
		}()
		if err := DialWrite(context.Background(), path, []byte("x\n")); !errors.Is(err, ErrUnread) {
			t.Fatalf("DialWrite = %v, want ErrUnread", err)
		}
	})

	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		want    error
	}{
		{"a missing socket is ErrNoSocket", func(*testing.T, string) {}, ErrNoSocket},
		{"a stale socket is ErrRefused", staleSocket, ErrRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(testutil.ShortTempDir(t), "d.sock")
			tt.prepare(t, path)
			if err := DialWrite(context.Background(), path, []byte("x\n")); !errors.Is(err, tt.want) {
				t.Errorf("DialWrite = %v, want %v", err, tt.want)
			}
		})
	}

	t.Run("a cancelled ctx stops before writing", func(t *testing.T) {
		path := filepath.Join(testutil.ShortTempDir(t), "d.sock")
		liveSocket(t, path)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := DialWrite(ctx, path, []byte("x\n"))
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
			t.Errorf("DialWrite = %v, want context.Canceled and not a timeout", err)
		}
	})
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		want    error // nil: the probe succeeds
		errno   error // the system cause still visible under the kind
	}{
		{"a live listener answers", liveSocket, nil, nil},
		{"a missing socket is ErrNoSocket", func(*testing.T, string) {}, ErrNoSocket, syscall.ENOENT},
		{"a stale socket is ErrRefused", staleSocket, ErrRefused, syscall.ECONNREFUSED},
		{"a full backlog is ErrBusy, which is alive", busySocket, ErrBusy, syscall.EAGAIN},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(testutil.ShortTempDir(t), "p.sock")
			tt.prepare(t, path)
			err := Probe(context.Background(), path)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Probe = %v, want %v", err, tt.want)
			}
			if tt.errno != nil && !errors.Is(err, tt.errno) {
				t.Errorf("Probe = %v, want it to wrap %v too", err, tt.errno)
			}
		})
	}

	t.Run("a ctx whose deadline has passed is ErrTimeout", func(t *testing.T) {
		path := filepath.Join(testutil.ShortTempDir(t), "p.sock")
		liveSocket(t, path)
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		if err := Probe(ctx, path); !errors.Is(err, ErrTimeout) {
			t.Errorf("Probe = %v, want ErrTimeout", err)
		}
	})

	t.Run("a path over 107 bytes is a PathTooLongError", func(t *testing.T) {
		var e *PathTooLongError
		if err := Probe(context.Background(), "/tmp/"+strings.Repeat("z", 200)); !errors.As(err, &e) {
			t.Errorf("Probe = %v, want *PathTooLongError", err)
		}
	})
}

func TestErrorsNameTheCauseOnce(t *testing.T) {
	err := Probe(context.Background(), filepath.Join(testutil.ShortTempDir(t), "gone.sock"))
	if strings.Count(err.Error(), "uds:") != 1 {
		t.Errorf("error %q repeats its prefix", err)
	}
	var op *net.OpError
	if !errors.As(err, &op) {
		t.Errorf("error %q hides the *net.OpError", err)
	}
}
