package uds

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ProcIdentity tells one process apart from any later process that reuses
// its pid: StartTicks changes with each process, BootID with each boot, PidNS
// and MachineID say which pid space and which machine the pid belongs to.
type ProcIdentity struct {
	PID        int
	StartTicks uint64
	BootID     string
	PidNS      uint64
	MachineID  string
}

// Identify reads the identity of pid. It reads the start ticks twice, first
// and last, so a pid recycled while we read is reported, not mixed.
func Identify(pid int) (ProcIdentity, error) {
	id := ProcIdentity{PID: pid}
	var err error
	if id.StartTicks, err = StartTicks(pid); err != nil {
		return ProcIdentity{}, err
	}
	if id.BootID, err = BootID(); err != nil {
		return ProcIdentity{}, err
	}
	if id.PidNS, err = PidNamespace(pid); err != nil {
		return ProcIdentity{}, err
	}
	if id.MachineID, err = MachineID(); err != nil {
		return ProcIdentity{}, err
	}
	again, err := StartTicks(pid)
	if err != nil {
		return ProcIdentity{}, err
	}
	if again != id.StartTicks {
		return ProcIdentity{}, fmt.Errorf("uds: identify pid %d: %w (pid reused while reading)", pid, ErrNoProcess)
	}
	return id, nil
}

var errMalformedStat = errors.New("malformed /proc/<pid>/stat")

// statStartField is the 1-based field number of starttime in /proc/<pid>/stat.
const statStartField = 22

// parseStatStartTicks returns field 22 (starttime, in clock ticks since boot)
// of a /proc/<pid>/stat line. Field 2 is "(comm)" and comm may hold spaces and
// parentheses, so fields are counted from after the LAST ')'; field 3 is the
// first one there.
func parseStatStartTicks(b []byte) (uint64, error) {
	fields, err := statFields(b)
	if err != nil {
		return 0, err
	}
	const idx = statStartField - 3
	if len(fields) <= idx {
		return 0, fmt.Errorf("%w: %d fields after comm, want more than %d", errMalformedStat, len(fields), idx)
	}
	v, err := strconv.ParseUint(string(fields[idx]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: starttime: %w", errMalformedStat, err)
	}
	return v, nil
}

// statFields returns the fields of /proc/<pid>/stat after the command name
// (field 3, the state, first). The name may hold spaces and parentheses, so
// it ends at the last ')'.
func statFields(b []byte) ([][]byte, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return nil, errMalformedStat
	}
	if _, err := strconv.ParseUint(string(bytes.TrimRight(b[:open], " ")), 10, 31); err != nil {
		return nil, fmt.Errorf("%w: bad pid field", errMalformedStat)
	}
	return bytes.Fields(b[end+1:]), nil
}

// parseStatState returns the state letter (field 3) and parent pid (field 4).
func parseStatState(b []byte) (state byte, ppid int, err error) {
	fields, err := statFields(b)
	if err != nil {
		return 0, 0, err
	}
	if len(fields) < 2 || len(fields[0]) != 1 {
		return 0, 0, fmt.Errorf("%w: no state and ppid", errMalformedStat)
	}
	p, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return 0, 0, fmt.Errorf("%w: ppid: %w", errMalformedStat, err)
	}
	return fields[0][0], p, nil
}

// parseBtime returns the "btime" (boot time, seconds since the epoch) line of
// /proc/stat.
func parseBtime(b []byte) (int64, error) {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		rest, ok := bytes.CutPrefix(line, []byte("btime "))
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
		if err != nil || v < 0 {
			return 0, errors.New("malformed btime line in /proc/stat")
		}
		return v, nil
	}
	return 0, errors.New("no btime line in /proc/stat")
}

// parseNSpid returns the last pid of the "NSpid:" line of /proc/<pid>/status:
// the pid in the innermost namespace the process lives in.
func parseNSpid(b []byte) (int, error) {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		rest, ok := bytes.CutPrefix(line, []byte("NSpid:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			break
		}
		v, err := strconv.Atoi(string(f[len(f)-1]))
		if err != nil || v <= 0 {
			break
		}
		return v, nil
	}
	return 0, errors.New("no NSpid line in /proc/<pid>/status")
}

// parseNSLink parses the target of a /proc/<pid>/ns/<kind> link, "kind:[inode]".
func parseNSLink(kind, s string) (uint64, error) {
	rest, ok := cutAffixes(s, kind+":[", "]")
	if !ok {
		return 0, fmt.Errorf("malformed namespace link %q", s)
	}
	v, err := strconv.ParseUint(rest, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("malformed namespace link %q", s)
	}
	return v, nil
}

func cutAffixes(s, prefix, suffix string) (string, bool) {
	if len(s) < len(prefix)+len(suffix) || s[:len(prefix)] != prefix || s[len(s)-len(suffix):] != suffix {
		return "", false
	}
	return s[len(prefix) : len(s)-len(suffix)], true
}

// lstartLayout is C asctime/ctime without the newline, which is what
// `LC_ALL=C TZ=UTC ps -o lstart=` prints: the day of month padded with a space.
const lstartLayout = "Mon Jan _2 15:04:05 2006"

// formatLstart is ps's lstart for a process started at
// btime + ticks/hz seconds: ps divides in integers, truncating the fraction.
func formatLstart(btime int64, ticks, hz uint64) string {
	return time.Unix(btime+int64(ticks/hz), 0).UTC().Format(lstartLayout)
}
