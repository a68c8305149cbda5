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
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/transport/uds"
)

// liveness is what we can prove about a registry entry's process.
type liveness uint8

const (
	livenessAlive    liveness = iota + 1
	livenessDead              // no such pid: safe to sweep
	livenessRecycled          // pid alive but started at another time: skip, never sweep
	livenessUnknown           // another machine or pid namespace: cannot tell
)

// checkProc decides an entry's liveness from its pid, procStart and pidDomain.
func (p *Peer) checkProc(e Entry) liveness {
	if e.PidDomain != "" && p.pidDomain != "" && e.PidDomain != p.pidDomain {
		return livenessUnknown
	}
	if !uds.Alive(e.PID) {
		return livenessDead
	}
	if e.ProcStart == "" {
		return livenessUnknown
	}
	if procStartMatches(e.PID, e.ProcStart) {
		return livenessAlive
	}
	return livenessRecycled
}

// procStartMatches accepts both spellings: Linux start ticks (what the real
// CLI writes on Linux) and `LC_ALL=C TZ=UTC ps -o lstart=` (seed 000, macOS).
func procStartMatches(pid int, procStart string) bool {
	if isDigits(procStart) {
		ticks, err := uds.StartTicks(pid)
		return err == nil && strconv.FormatUint(ticks, 10) == procStart
	}
	want, err := time.Parse(time.ANSIC, strings.TrimSpace(procStart))
	if err != nil {
		return false
	}
	got, err := uds.Lstart(pid)
	if err != nil {
		return false
	}
	have, err := time.Parse(time.ANSIC, got)
	if err != nil {
		return false
	}
	// ps truncates while we compute from ticks: allow one second either way.
	d := have.Sub(want)
	return d >= -time.Second && d <= time.Second
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

// probeTimeout bounds the connect probe per socket.
const probeTimeout = 500 * time.Millisecond

// Sessions lists every live Claude Code peer on this machine but ourselves.
// Dead entries are swept; recycled and foreign ones are skipped.
func (p *Peer) Sessions(ctx context.Context) ([]message.Session, error) {
	entries, bad, err := readEntries(p.sessionsDir)
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

func (p *Peer) rosterEntry(ctx context.Context, e Entry) (message.Session, bool) {
	if e.PID == p.pid || e.MessagingSocketPath == "" || e.MessagingSocketPath == p.socketPath {
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
	if err := uds.Probe(pctx, e.MessagingSocketPath); err != nil {
		p.log.Debug("peer socket does not answer", "pid", e.PID, "err", err)
		return message.Session{}, false
	}
	s := message.Session{
		Address:   "uds:" + e.MessagingSocketPath,
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
	}
	if e.StartedAt > 0 {
		s.StartedAt = time.UnixMilli(e.StartedAt).UTC()
	}
	return s, true
}

// sweep removes the registry entry and key file of a process proven dead,
// re-checking just before, so a restarted pid's fresh files are kept.
func (p *Peer) sweep(e Entry) {
	path := filepath.Join(p.sessionsDir, strconv.Itoa(e.PID)+".json")
	fi, err := os.Lstat(path)
	if err != nil || uds.Alive(e.PID) {
		return
	}
	if err := uds.RemoveIfSame(path, fi); err != nil && !errors.Is(err, os.ErrNotExist) {
		p.log.Debug("sweeping dead entry failed", "file", path, "err", err)
		return
	}
	key := filepath.Join(p.sessionsDir, KeyFileName(e.PID, e.MessagingSocketPath))
	if fi, err := os.Lstat(key); err == nil {
		_ = uds.RemoveIfSame(key, fi)
	}
	p.log.Info("swept registry entry of a dead session", "pid", e.PID, "name", e.Name)
}

// Claims reports that this leg can dial a uds: address without a registry
// entry: any socket but Qwen Code's inboxes (qwen-socks directories).
func (p *Peer) Claims(a addressing.Address) bool {
	return a.Kind == addressing.KindUDS && !strings.Contains(filepath.Dir(a.Path), "qwen-socks")
}
