package claude

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// liveness is what we can prove about a registry entry's process.
type liveness uint8

const (
	livenessAlive    liveness = iota + 1
	livenessDead              // no such pid: safe to sweep
	livenessRecycled          // pid alive but started at another time: skip, never sweep
	livenessUnknown           // another (or no) pid domain, no procStart, or unreadable: the probe decides
)

// checkProc decides an entry's liveness from its pid, procStart and pidDomain
// the way the real CLI's roster does: only an entry that names our own pid
// domain can be judged; one that names another (or none, or an empty one)
// is unknown, and the connect probe decides. A live pid whose start time
// cannot be read, or an entry without procStart, is unknown too; a procStart
// that is present but differs, even an empty one, is a recycled pid.
func (p *Leg) checkProc(e Entry) liveness {
	if e.PidDomain != p.pidDomain || p.pidDomain == "" {
		return livenessUnknown
	}
	if !uds.Alive(e.PID) {
		return livenessDead
	}
	if e.ProcStart == "" && !e.hasProcStart {
		return livenessUnknown
	}
	switch procStartCheck(e.PID, e.ProcStart) {
	case startMatches:
		return livenessAlive
	case startUnreadable:
		return livenessUnknown
	}
	return livenessRecycled
}

// sweepable is the real CLI's second chance at a sweep: an entry the probe
// found silent is removed when its pid is gone and it names our pid domain,
// or none at all.
func (p *Leg) sweepable(e Entry) bool {
	return e.PidDomain == p.pidDomain || (e.PidDomain == "" && !e.hasPidDomain)
}

// startCheck is what reading a live pid's start time told us.
type startCheck uint8

const (
	startMatches startCheck = iota + 1
	startDiffers
	startUnreadable // e.g. /proc mounted with hidepid: nothing proven
)

// procStartMatches reports whether pid started when procStart says.
func procStartMatches(pid int, procStart string) bool {
	return procStartCheck(pid, procStart) == startMatches
}

// procStartCheck accepts both spellings: Linux start ticks (what the real
// CLI writes on Linux, compared as exact strings like it does) and
// `LC_ALL=C TZ=UTC ps -o lstart=` (macOS; docs/protocols/claude-peer-socket.md#registry-entry).
func procStartCheck(pid int, procStart string) startCheck {
	if isDigits(procStart) {
		// A running process's ticks, from its pin when one is held.
		ticks, ok := uds.LiveStart(pid)
		if !ok {
			var err error
			if ticks, err = uds.StartTicks(pid); err != nil {
				return startUnreadable
			}
		}
		if strconv.FormatUint(ticks, 10) == procStart {
			return startMatches
		}
		return startDiffers
	}
	want, err := time.Parse(time.ANSIC, strings.TrimSpace(procStart))
	if err != nil {
		return startDiffers
	}
	got, err := uds.Lstart(pid)
	if err != nil {
		return startUnreadable
	}
	have, err := time.Parse(time.ANSIC, got)
	if err != nil {
		return startUnreadable
	}
	// ps truncates while we compute from ticks: allow one second either way.
	if d := have.Sub(want); d >= -time.Second && d <= time.Second {
		return startMatches
	}
	return startDiffers
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// probeTimeout bounds the connect probe per socket (the real CLI gives it
// 250 ms). A variable, like probeSocket, so tests can hold a probe open.
var probeTimeout = 500 * time.Millisecond

// probeSocket is the liveness probe: an empty connection, like the real
// CLI's, whose listener must be the entry's process (uds.ProbeHeld).
var probeSocket = uds.ProbeHeld

// Sessions lists every live Claude Code peer on this machine but ourselves,
// by the real CLI's rules: an entry with a socket, not ours, not spare or
// parked, not a recycled pid, whose socket accepts a bounded connect probe.
// Entries of another pid namespace are judged by the probe alone. Entries
// proven dead are swept; recycled and foreign ones never are. Beyond the
// real CLI, the probe checks that the socket's listener is the entry's own
// process (anyone of ours may write an entry naming any socket), and a
// registry directory others may write is not read at all.
func (p *Leg) Sessions(ctx context.Context) ([]message.Session, error) {
	if err := p.registry.Check(); err != nil {
		return nil, err
	}
	entries, bad, err := p.readEntries()
	if err != nil {
		return nil, err
	}
	for name, e := range bad {
		p.log.Debug("unreadable registry entry skipped", "file", name, "err", e)
	}
	type result struct {
		s  message.Session
		ok bool
	}
	// Probes run in parallel, at most 16 at once, so one stuck socket costs
	// one probe timeout rather than one per entry.
	res := make([]result, len(entries))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, e := range entries {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res[i].s, res[i].ok = p.rosterEntry(ctx, e)
		})
	}
	wg.Wait()
	out := make([]message.Session, 0, len(res))
	for _, r := range res {
		if r.ok {
			out = append(out, r.s)
		}
	}
	return out, nil
}

func (p *Leg) rosterEntry(ctx context.Context, e Entry) (message.Session, bool) {
	// Like the real CLI: no socket, our own entry, and spare or parked
	// sessions (placeholders, not someone to talk to) are never listed.
	if e.PID == p.pid || e.MessagingSocketPath == "" || e.MessagingSocketPath == p.socketPath || e.parked {
		return message.Session{}, false
	}
	if _, ppid, err := uds.ProcState(e.PID); err == nil && e.Kind == KindAlias && ppid == p.pid {
		// Our own alias workers stand for sessions of other legs; listing
		// them would show every bridged session twice.
		return message.Session{}, false
	}
	switch p.checkProc(e) {
	case livenessDead:
		p.sweep(e)
		return message.Session{}, false
	case livenessRecycled:
		p.log.Debug("registry entry of a recycled pid skipped", "pid", e.PID)
		return message.Session{}, false
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if err := probeSocket(pctx, e.MessagingSocketPath, p.holderOf(e.PID, e.PidDomain, e.hasPidDomain)); err != nil {
		if errors.Is(err, uds.ErrNotHolder) {
			p.log.Info("registry entry skipped: its socket belongs to another process", "pid", e.PID, "name", e.Name, "err", err)
		} else {
			p.log.Debug("peer socket does not answer", "pid", e.PID, "err", err)
		}
		if p.sweepable(e) && !uds.Alive(e.PID) {
			p.sweep(e)
		}
		return message.Session{}, false
	}
	s := message.Session{
		Address:   addressing.UDS(e.MessagingSocketPath),
		Protocol:  message.ProtocolClaude,
		Name:      e.Name,
		Ref:       addressing.Ref(e.SessionID),
		NativeRef: NativeRef(e.MessagingSocketPath),
		SessionID: e.SessionID,
		PID:       e.PID,
		Kind:      e.Kind,
		Status:    e.Status,
		Cwd:       e.Cwd,
		Version:   e.Version,
		Reachable: true,
		// A bridge id the address grammar refuses could never be asked for.
		BridgeSessionID: validBridgeID(e.BridgeSessionID),
	}
	if e.StartedAt > 0 {
		s.StartedAt = time.UnixMilli(e.StartedAt).UTC()
	} else if p.holderOf(e.PID, e.PidDomain, e.hasPidDomain).PidNS == 0 {
		// No start time in the record: its process's, when the pid is
		// one of our namespace (else it names another process here).
		s.StartedAt, _ = uds.StartTime(e.PID)
	}
	return s, true
}

// holderOf is who must listen on the socket of an entry of pid whose pid
// domain is domain (has: the entry names one): pid itself, in the
// namespace the domain names. No domain, or ours, is our namespace; one we
// cannot read is some other namespace.
func (p *Leg) holderOf(pid int, domain string, has bool) uds.Holder {
	h := uds.Holder{PID: pid}
	if !has || domain == p.pidDomain {
		return h
	}
	h.PidNS = ^uint64(0) // another namespace, not one we can name
	if i := strings.LastIndex(domain, ":pid:["); i >= 0 && strings.HasSuffix(domain, "]") {
		if ns, err := strconv.ParseUint(domain[i+len(":pid:["):len(domain)-1], 10, 64); err == nil && ns != 0 {
			h.PidNS = ns
		}
	}
	return h
}

// sweep removes the registry entry and key file of a process proven dead,
// re-checking just before, so a restarted pid's fresh files are kept.
func (p *Leg) sweep(e Entry) {
	path := filepath.Join(p.sessionsDir, strconv.Itoa(e.PID)+".json")
	fi, err := os.Lstat(path)
	if err != nil || uds.Alive(e.PID) {
		return
	}
	if err := safefile.RemoveIfSame(path, fi); err != nil && !errors.Is(err, os.ErrNotExist) {
		p.log.Debug("sweeping dead entry failed", "file", path, "err", err)
		return
	}
	key := filepath.Join(p.sessionsDir, KeyFileName(e.PID, e.MessagingSocketPath))
	if fi, err := os.Lstat(key); err == nil {
		_ = safefile.RemoveIfSame(key, fi)
	}
	p.log.Info("swept registry entry of a dead session", "pid", e.PID, "name", e.Name)
}

// Claims reports that this leg can dial a uds: address without a registry
// entry: any socket but Qwen Code's inboxes (qwen-socks directories).
func (p *Leg) Claims(a addressing.Address) bool {
	return a.Kind == addressing.KindUDS && !strings.Contains(filepath.Dir(a.Path), "qwen-socks")
}

// validBridgeID is id when bridge:<id> parses, else "".
func validBridgeID(id string) string {
	if a, err := addressing.Parse("bridge:" + id); err != nil || a.ID != id {
		return ""
	}
	return id
}
