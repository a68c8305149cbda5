package safefile

import (
	"fmt"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// nobody is the uid asUser takes: the overflow uid, no one's files.
const nobody = 65534

// asUser runs f on an OS thread of its own whose effective uid is uid, so
// root's licence to read and write any directory does not apply to what f
// checks. Only that thread changes (a raw setresuid, not syscall's, which
// changes every thread), and it ends with f: it is never unlocked, so the
// runtime retires it and no other goroutine runs as uid.
func asUser(t *testing.T, uid int, f func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		keep := ^uintptr(0)    // -1: leave the real and saved uids alone
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, keep, uintptr(uid), keep); e != 0 {
			errc <- fmt.Errorf("setresuid(-1, %d, -1): %w", uid, e)
			return
		}
		errc <- f()
	}()
	return <-errc
}
