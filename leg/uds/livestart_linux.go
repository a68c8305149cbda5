package uds

import (
	"math"
	"sync"

	"golang.org/x/sys/unix"
)

// maxPinned bounds the processes LiveStart holds a pidfd for; past it the
// pin of some other pid is let go (it is only a cache).
const maxPinned = 128

// pins are the processes LiveStart has read, each held by a pidfd: while
// the pidfd does not poll readable, the process it names has not exited,
// so the pid still names it and its start ticks are still those read.
var pins = struct {
	mu sync.Mutex // held across a poll too, so no fd is closed under it
	m  map[int]pin
}{m: map[int]pin{}}

type pin struct {
	fd    int
	ticks uint64
}

// LiveStart is pid's start ticks (as StartTicks reads them) when pid is a
// running process, not a zombie; false when it is not, or when that cannot
// be told. The first ask reads /proc/<pid>/stat and pins the process with
// a pidfd; later asks cost one poll of it while that process runs, which
// is what a send to a registered session asks every time.
func LiveStart(pid int) (uint64, bool) {
	if pid <= 0 || pid > math.MaxInt32 {
		return 0, false
	}
	pins.mu.Lock()
	defer pins.mu.Unlock()
	if p, ok := pins.m[pid]; ok {
		if running(p.fd) {
			return p.ticks, true
		}
		unix.Close(p.fd)
		delete(pins.m, pid)
	}
	// The pidfd first, the read second: if pid were reused in between,
	// the pidfd names the process that exited and polls readable.
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return liveStartUnpinned(pid) // an older kernel, or a sandbox that refuses it
	}
	b, err := readProc(pid, "stat", maxStatLen)
	var ticks uint64
	var state byte
	if err == nil {
		ticks, err = parseStatStartTicks(b)
	}
	if err == nil {
		state, _, err = parseStatState(b)
	}
	if err != nil || state == 'Z' || !running(fd) {
		unix.Close(fd)
		return 0, false
	}
	if len(pins.m) >= maxPinned {
		for k, p := range pins.m {
			unix.Close(p.fd)
			delete(pins.m, k)
			break
		}
	}
	pins.m[pid] = pin{fd: fd, ticks: ticks}
	return ticks, true
}

// running reports whether the process of a pidfd has not exited: a pidfd
// polls readable once it has (a zombie included).
func running(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 0
}

// liveStartUnpinned is LiveStart without a pidfd: a read of
// /proc/<pid>/stat every time.
func liveStartUnpinned(pid int) (uint64, bool) {
	b, err := readProc(pid, "stat", maxStatLen)
	if err != nil {
		return 0, false
	}
	ticks, err := parseStatStartTicks(b)
	if err != nil {
		return 0, false
	}
	state, _, err := parseStatState(b)
	return ticks, err == nil && state != 'Z'
}
