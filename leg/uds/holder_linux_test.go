package uds

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sessiongateway/gateway/internal/testutil"
)

// listenAsUID binds and listens at path from one OS thread whose effective
// uid is uid for the listen(2) call only (root only): the kernel records
// that uid as the listener's, with our pid. The thread is never handed
// back to the runtime.
func listenAsUID(t *testing.T, path string, uid int) net.Listener {
	t.Helper()
	type result struct {
		fd  int
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with us
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			err = unix.Bind(fd, &unix.SockaddrUnix{Name: path})
		}
		if err == nil {
			if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
				err = e
			}
		}
		if err == nil {
			err = unix.Listen(fd, 16)
			if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 0, ^uintptr(0)); e != 0 && err == nil {
				err = e
			}
		}
		res <- result{fd, err}
	}()
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	f := os.NewFile(uintptr(r.fd), path)
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln
}

func TestAListenerOfAnotherUIDIsNotOurs(t *testing.T) {
	testutil.Need(t, os.Geteuid() == 0, "needs root on Linux to listen as another uid")
	path := filepath.Join(testutil.ShortTempDir(t), "nobody.sock")
	listenAsUID(t, path, 65534)
	for _, h := range []Holder{{}, {PID: os.Getpid()}} {
		err := ProbeHeld(context.Background(), path, h)
		var he *HolderError
		if !errors.As(err, &he) || he.Got.UID != 65534 {
			t.Errorf("ProbeHeld(%+v) = %v, want a HolderError naming uid 65534", h, err)
		}
	}
}
