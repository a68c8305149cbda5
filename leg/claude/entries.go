package claude

import (
	"fmt"
	"path/filepath"

	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// MaxEntries bounds the registry entries one listing reads, parses and
// probes: entry names (<pid>.json) allow billions, anyone of ours can
// write them, and a listing runs at every bridge sync, resolve and send
// to an address without a key file. Entries of live pids are read first,
// so files planted for pids that are not running cannot push a live
// session out; what is left over is counted once (noteOverCap).
const MaxEntries = 1024

// readEntries reads the <pid>.json entries of the registry directory, at
// most MaxEntries, live pids first; bad ones are reported by name.
func (p *Leg) readEntries() (entries []Entry, bad map[string]error, err error) {
	ents, _, err := p.registry.List()
	if err != nil {
		return nil, nil, err
	}
	type file struct {
		name string
		pid  int
	}
	var live, rest []file
	total := 0
	for _, de := range ents {
		pid, ok := entryPID(de.Name())
		if !ok || !de.Type().IsRegular() {
			continue
		}
		total++
		if uds.Alive(pid) {
			live = append(live, file{de.Name(), pid})
		} else if len(live)+len(rest) < MaxEntries {
			rest = append(rest, file{de.Name(), pid}) // read only if room is left
		}
	}
	files := append(live, rest...)
	files = files[:min(len(files), MaxEntries)]
	bad = map[string]error{}
	for _, f := range files {
		e, err := p.entries.Get(filepath.Join(p.sessionsDir, f.name))
		if err != nil {
			bad[f.name] = err
			continue
		}
		if e.PID != f.pid {
			bad[f.name] = fmt.Errorf("pid %d in a file named for %d", e.PID, f.pid)
			continue
		}
		entries = append(entries, e)
	}
	p.noteOverCap(total - len(files))
	return entries, bad, nil
}

// noteOverCap logs and counts (a drop, reason record-limit) the first
// listing that left entries unread, not every one after it until one reads
// them all again.
func (p *Leg) noteOverCap(over int) {
	if was := p.overCap.Swap(over > 0); over == 0 || was {
		return
	}
	p.log.Warn("claude registry entries left unread: too many entry files", "unread", over,
		"max", MaxEntries, "dir", p.sessionsDir)
	// Offered, never waited for: a listing must not wait on the router.
	p.notice(message.Event{Type: message.EventDrop, Drop: &message.Drop{Reason: message.DropRecordLimit}})
}
