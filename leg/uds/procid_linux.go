package uds

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiongateway/gateway/internal/safefile"
)

// Caps on what we read from /proc and /etc: far above real sizes.
const (
	maxStatLen     = 4 << 10
	maxProcStatLen = 16 << 20 // /proc/stat grows with CPUs and IRQs
	maxIDLen       = 4 << 10
	maxStatusLen   = 64 << 10
)

// StartTicks returns when pid started, in clock ticks since boot: field 22 of
// /proc/<pid>/stat. Claude Code publishes it as procStart on Linux.
func StartTicks(pid int) (uint64, error) {
	b, err := readProc(pid, "stat", maxStatLen)
	if err != nil {
		return 0, err
	}
	v, err := parseStatStartTicks(b)
	if err != nil {
		return 0, fmt.Errorf("uds: start ticks of pid %d: %w", pid, err)
	}
	return v, nil
}

// ProcState is pid's state letter ('R', 'S', 'Z', ...) and parent pid,
// fields 3 and 4 of /proc/<pid>/stat.
func ProcState(pid int) (state byte, ppid int, err error) {
	b, err := readProc(pid, "stat", maxStatLen)
	if err != nil {
		return 0, 0, err
	}
	state, ppid, err = parseStatState(b)
	if err != nil {
		return 0, 0, fmt.Errorf("uds: state of pid %d: %w", pid, err)
	}
	return state, ppid, nil
}

// InnermostPID is pid as its own pid namespace numbers it: the last field
// of the NSpid line of /proc/<pid>/status (pid itself when it lives in ours).
func InnermostPID(pid int) (int, error) {
	b, err := readProc(pid, "status", maxStatusLen)
	if err != nil {
		return 0, err
	}
	v, err := parseNSpid(b)
	if err != nil {
		return 0, fmt.Errorf("uds: innermost pid of pid %d: %w", pid, err)
	}
	return v, nil
}

// BootID is the kernel's random id for this boot.
func BootID() (string, error) {
	if id := bootID.Load(); id != nil {
		return *id, nil
	}
	id, err := readID("/proc/sys/kernel/random/boot_id")
	if err == nil {
		bootID.Store(&id)
	}
	return id, err
}

// bootID is this boot's id once read: it cannot change under a running
// process, and every liveness judgement of a record asks for it.
var bootID atomic.Pointer[string]

// PidNamespace returns the inode number of pid's pid namespace, the NNN of
// the "pid:[NNN]" link /proc/<pid>/ns/pid.
func PidNamespace(pid int) (uint64, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("uds: pid namespace of pid %d: %w", pid, ErrNoProcess)
	}
	p := "/proc/" + strconv.Itoa(pid) + "/ns/pid"
	target, err := os.Readlink(p)
	if err == nil {
		v, perr := parseNSLink("pid", target)
		if perr == nil {
			return v, nil
		}
		err = perr
	}
	// The link's inode is the namespace's: stat follows the magic link.
	fi, serr := os.Stat(p)
	if serr == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return st.Ino, nil
		}
	}
	return 0, procErr("pid namespace", pid, errors.Join(err, serr))
}

// machineIDFiles are where MachineID looks, in order.
var machineIDFiles = []string{"/etc/machine-id", "/var/lib/dbus/machine-id"}

// MachineID reads /etc/machine-id, falling back to /var/lib/dbus/machine-id.
// When neither exists (a container without the host's mounted) the error
// wraps ErrNoMachineID, which names the mount that fixes it.
func MachineID() (string, error) {
	var errs []error
	missing := true
	for _, f := range machineIDFiles {
		id, err := readID(f)
		if err == nil {
			return id, nil
		}
		errs = append(errs, err)
		missing = missing && errors.Is(err, fs.ErrNotExist)
	}
	if missing {
		return "", fmt.Errorf("%w (%s: none exists)", ErrNoMachineID, strings.Join(machineIDFiles, ", "))
	}
	return "", errors.Join(errs...)
}

// Lstart returns what `LC_ALL=C TZ=UTC ps -o lstart= -p PID` prints, without
// running ps: /proc/stat's btime plus the start ticks over CLK_TCK, truncated
// to the second, as C asctime in UTC ("Mon Jan  2 15:04:05 2006").
//
// procps 4 estimates the boot time as now minus /proc/uptime instead of
// reading btime, so its output can differ from ours, and from itself on
// another run, by one second. Ours is stable for the life of the process.
func Lstart(pid int) (string, error) {
	ticks, err := StartTicks(pid)
	if err != nil {
		return "", err
	}
	b, err := safefile.ReadCapped("/proc/stat", maxProcStatLen)
	if err != nil {
		return "", fmt.Errorf("uds: lstart of pid %d: %w", pid, err)
	}
	btime, err := parseBtime(b)
	if err != nil {
		return "", fmt.Errorf("uds: lstart of pid %d: %w", pid, err)
	}
	return formatLstart(btime, ticks, clockTicks()), nil
}

// StartTime is when pid started: /proc/stat's btime plus its start ticks
// over CLK_TCK, to the tick. A session whose registry record gives no
// start time is listed with this one.
func StartTime(pid int) (time.Time, error) {
	ticks, err := StartTicks(pid)
	if err != nil {
		return time.Time{}, err
	}
	b, err := safefile.ReadCapped("/proc/stat", maxProcStatLen)
	if err != nil {
		return time.Time{}, fmt.Errorf("uds: start time of pid %d: %w", pid, err)
	}
	btime, err := parseBtime(b)
	if err != nil {
		return time.Time{}, fmt.Errorf("uds: start time of pid %d: %w", pid, err)
	}
	hz := clockTicks()
	return time.Unix(btime+int64(ticks/hz), int64(ticks%hz)*int64(time.Second)/int64(hz)).UTC(), nil
}

// atClkTck is the ELF auxiliary vector key for sysconf(_SC_CLK_TCK).
const atClkTck = 17

// clockTicks is CLK_TCK (USER_HZ), from the auxiliary vector as glibc's
// sysconf reads it; 100, Linux's value everywhere, if that is unavailable.
var clockTicks = sync.OnceValue(func() uint64 {
	if auxv, err := unix.Auxv(); err == nil {
		for _, kv := range auxv {
			if kv[0] == atClkTck && kv[1] > 0 {
				return uint64(kv[1])
			}
		}
	}
	return 100
})

func readProc(pid int, name string, max int64) ([]byte, error) {
	if pid <= 0 {
		return nil, procErr(name, pid, ErrNoProcess)
	}
	b, err := safefile.ReadCapped("/proc/"+strconv.Itoa(pid)+"/"+name, max)
	if err != nil {
		return nil, procErr(name, pid, err)
	}
	return b, nil
}

func procErr(what string, pid int, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return &opError{op: what + " of", path: "pid " + strconv.Itoa(pid), kind: ErrNoProcess, cause: err}
	}
	return fmt.Errorf("uds: %s of pid %d: %w", what, pid, err)
}

func readID(path string) (string, error) {
	b, err := safefile.ReadCapped(path, maxIDLen)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if id == "" || strings.ContainsAny(id, "\n\x00") {
		return "", fmt.Errorf("uds: %s: malformed id", path)
	}
	return id, nil
}
