package uds

import (
	"errors"
	"math"

	"golang.org/x/sys/unix"
)

// Alive reports whether a process with this pid exists: kill(pid, 0) succeeds
// or is refused for permission (EPERM: it exists, it is not ours). A zombie
// counts as alive until reaped. pid <= 0 names groups, not a process, and a
// pid over int32 would wrap to one in the kernel, so both are false.
func Alive(pid int) bool {
	if pid <= 0 || pid > math.MaxInt32 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
