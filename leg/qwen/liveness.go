package qwen

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/leg/uds"
)

// ProcessFacts is what a reader knows about itself and about other
// processes, the inputs of Judge. HostFacts reads them from the system;
// tests supply their own.
type ProcessFacts interface {
	// PidNS is the inode of the reader's own pid namespace; ok is false
	// where there is none to read (not Linux).
	PidNS() (ns uint64, ok bool)
	// BootID is this boot's /proc/sys/kernel/random/boot_id.
	BootID() (id string, ok bool)
	// Alive reports whether pid names a running process: kill(pid, 0)
	// succeeds or is refused for permission, and it is not a zombie.
	Alive(pid int) bool
	// ProcStart is pid's procStart token now, "<boot id>:<start ticks>";
	// ok is false when it cannot be read.
	ProcStart(pid int) (token string, ok bool)
}

// Verdict is what a reader concludes about a record.
type Verdict uint8

const (
	// VerdictLive: list it (dial its ipcPath before calling it reachable).
	VerdictLive Verdict = iota + 1
	// VerdictDead: its process is gone, or its pid now belongs to a
	// process that started later. The only verdict that may be swept.
	VerdictDead
	// VerdictMisnamed: the file name's pid is not the record's. Ignored,
	// never swept.
	VerdictMisnamed
	// VerdictForeign: another pid namespace or another boot (a home shared
	// with a container or another machine). Ignored, never swept: its
	// process may be alive where we cannot see it.
	VerdictForeign
)

var verdictNames = [...]string{VerdictLive: "live", VerdictDead: "dead", VerdictMisnamed: "misnamed", VerdictForeign: "foreign"}

func (v Verdict) String() string { return wireName(verdictNames[:], int(v), "verdict") }

// Sweepable reports whether a lister may delete the record: only a proven
// dead one. Records that did not parse (ErrUnusableRecord, ErrNewerSchema)
// are never swept either.
func (v Verdict) Sweepable() bool { return v == VerdictDead }

// Judge applies Qwen Code's liveness rules to the record r read from the
// file named fileName, in its order:
//
//  1. the name is <pid>.json or <pid>-<8 hex>.json and that pid is r.PID;
//  2. r.PidNS is the reader's (a record without one matches only a reader
//     without one: on Linux, never);
//  3. the boot id inside r.ProcStart is the reader's, when it names one;
//  4. the pid is alive (a zombie is not), and when both r.ProcStart and
//     the pid's current token are known, they are equal.
//
// Failing 1 is VerdictMisnamed, 2 or 3 VerdictForeign, 4 VerdictDead.
//
// The protocol page says a dead record is swept "only when procStart proves
// the PID is not merely reused"; Qwen Code sweeps any record that fails
// step 4, a dead pid without procStart included, and so does this.
func Judge(fileName string, r Record, facts ProcessFacts) Verdict {
	if pid, _, ok := ParseRecordFileName(fileName); !ok || pid != r.PID {
		return VerdictMisnamed
	}
	ownNS, ok := facts.PidNS()
	if !ok {
		ownNS = 0
	}
	if r.PidNS != ownNS {
		return VerdictForeign
	}
	if boot, named := bootOf(r.ProcStart); named {
		own, known := facts.BootID()
		if !known || boot != own {
			return VerdictForeign
		}
	}
	if lf, ok := facts.(liveFacts); ok {
		// Both answers from one look at the process.
		cur, alive, known := lf.LiveProcStart(r.PID)
		switch {
		case !alive:
			return VerdictDead
		case r.ProcStart == "" || !known || cur == r.ProcStart:
			return VerdictLive
		}
		return VerdictDead
	}
	if !facts.Alive(r.PID) {
		return VerdictDead
	}
	if r.ProcStart == "" {
		return VerdictLive // nothing to tell a reused pid by
	}
	cur, ok := facts.ProcStart(r.PID)
	if !ok || cur == r.ProcStart {
		return VerdictLive
	}
	return VerdictDead
}

// liveFacts is ProcessFacts that tells Alive and ProcStart of one pid in
// one look (HostFacts: a send judges its target's record every time).
type liveFacts interface {
	// LiveProcStart is Alive(pid), and ProcStart(pid) when alive.
	LiveProcStart(pid int) (token string, alive, known bool)
}

// MayReplace reports whether a process may write its record over data, the
// current content of <pid>.json (its own pid's bare name): when data does
// not parse as a record at all, or when it provably is a record an earlier
// process with this pid left (same pid, same pid namespace, same boot, a
// different start). A newer-schema record, or any record it cannot prove
// stale, is kept; the writer uses <pid>-<8 hex>.json instead. Only a regular
// file is a candidate; the caller treats anything else at the path as taken.
func MayReplace(data []byte, pid int, facts ProcessFacts) bool {
	r, err := ParseRecord(data)
	if errors.Is(err, ErrNewerSchema) {
		return false
	}
	if err != nil {
		return true
	}
	ownNS, _ := facts.PidNS()
	cur, ok := facts.ProcStart(pid)
	if r.PID != pid || r.PidNS != ownNS || r.ProcStart == "" || !ok {
		return false
	}
	recBoot, named := bootOf(r.ProcStart)
	curBoot, _ := bootOf(cur)
	return named && recBoot == curBoot && r.ProcStart != cur
}

// Reach is what dialing a live record's ipcPath said.
type Reach uint8

const (
	ReachAlive   Reach = iota + 1 // a listener accepted, or its backlog is full
	ReachDead                     // no socket file, or nobody listens on it
	ReachUnknown                  // anything else, a timeout included
)

var reachNames = [...]string{ReachAlive: "alive", ReachDead: "dead", ReachUnknown: "unknown"}

func (r Reach) String() string { return wireName(reachNames[:], int(r), "reach") }

// ProbeTimeout is how long Qwen Code waits for a liveness dial (uds.Probe
// defaults to longer; pass a context with this deadline).
const ProbeTimeout = 250 * time.Millisecond

// ClassifyProbe reads the result of uds.Probe as Qwen Code reads a dial: a
// connection or a full backlog is alive, no socket or a refused connection
// is dead, anything else unknown. A listing advertises only ReachAlive; a
// socket sweep removes only ReachDead.
func ClassifyProbe(err error) Reach {
	switch {
	case err == nil, errors.Is(err, uds.ErrBusy):
		return ReachAlive
	case errors.Is(err, uds.ErrNoSocket), errors.Is(err, uds.ErrRefused):
		return ReachDead
	}
	return ReachUnknown
}

// HostFacts reads ProcessFacts from this system. Off Linux it knows no
// namespace, boot id or start token, and Alive has no zombie check.
type HostFacts struct{}

// PidNS is our own pid namespace.
func (HostFacts) PidNS() (uint64, bool) { return ownPidNS() }

// ownPidNS is read once: a process never changes its own pid namespace.
var ownPidNS = sync.OnceValues(func() (uint64, bool) {
	ns, err := uds.PidNamespace(os.Getpid())
	return ns, err == nil
})

// BootID is this boot's id.
func (HostFacts) BootID() (string, bool) {
	id, err := uds.BootID()
	return id, err == nil
}

// Alive reports whether pid runs and is not a zombie.
func (HostFacts) Alive(pid int) bool {
	if _, ok := uds.LiveStart(pid); ok {
		return true // running, not a zombie
	}
	return uds.Alive(pid) && !isZombie(pid)
}

// ProcStart is pid's current "<boot id>:<start ticks>".
func (HostFacts) ProcStart(pid int) (string, bool) { return ProcStartToken(pid) }

// LiveProcStart is Alive and ProcStart in one look while pid runs (one
// poll of the pidfd uds.LiveStart keeps for it); the two apart otherwise.
func (h HostFacts) LiveProcStart(pid int) (token string, alive, known bool) {
	if ticks, ok := uds.LiveStart(pid); ok {
		boot, err := uds.BootID()
		if err != nil {
			return "", true, false
		}
		return boot + ":" + strconv.FormatUint(ticks, 10), true, true
	}
	if !h.Alive(pid) {
		return "", false, false
	}
	token, known = h.ProcStart(pid)
	return token, true, known
}

// ProcStartToken reads pid's procStart: "<boot id>:<start ticks>".
func ProcStartToken(pid int) (string, bool) {
	boot, err := uds.BootID()
	if err != nil {
		return "", false
	}
	ticks, ok := uds.LiveStart(pid)
	if !ok {
		if ticks, err = uds.StartTicks(pid); err != nil {
			return "", false
		}
	}
	return boot + ":" + strconv.FormatUint(ticks, 10), true
}

// isZombie reports whether /proc/<pid>/stat shows state Z. Where it cannot
// be read, the process is not taken for a zombie.
func isZombie(pid int) bool {
	state, _, err := uds.ProcState(pid)
	return err == nil && state == 'Z'
}
