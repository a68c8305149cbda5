package qwen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// listed is one live record and its file.
type listed struct {
	file string
	rec  Record
}

// recordIndex is the inbox each record file named when one pass over a
// kept listing (gen, see uds.RegistryDir.List) read them all. While the
// listing is the same no record file was created, replaced or removed,
// so a send to one inbox looks only at the files that named it then (and
// at any whose parse was not kept): a file of another inbox is skipped
// unread. Qwen Code and its SDK rewrite a record by renaming a new file
// over it, which changes the listing; a record edited in place to name
// another inbox is hidden from the index, so a send that finds no record
// as asked reads every file once more (target).
type recordIndex struct {
	gen   uint64
	inbox map[string]string // by file
}

// Bounds on the record files one pass reads and judges: file names
// (<pid>-<8 hex>.json) allow billions per process, and anyone of ours can
// write them. The cap per process comes first, so one process's files
// cannot push another's record out of the total.
const (
	MaxRecordsPerPID = 64
	MaxRecords       = 1024
)

// readRecords reads every live record but our own (those naming inbox,
// when it is not ""); dead ones are swept after a re-read proves them the
// same incarnation. Only the records kept are judged, which takes reads of
// /proc: a send judges its target's alone. With useIndex, files the index
// says name another inbox are not read; hid says whether it hid any.
func (p *Leg) readRecords(ctx context.Context, inbox string, useIndex bool) (out []listed, hid bool, err error) {
	// The directory is read again only once it changed; each record file
	// is looked at (and read again once changed) unless the index says it
	// names another inbox.
	ents, gen, err := p.registry.List()
	if err != nil {
		return nil, false, err
	}
	idx := p.index.Load()
	if !useIndex || inbox == "" || gen == 0 || idx == nil || idx.gen != gen {
		idx = nil
	}
	var next map[string]string // the index this pass builds, when it reads every file of a kept listing
	if gen != 0 && idx == nil {
		next = make(map[string]string, len(ents))
	}
	perPID, read, over := map[int]int{}, 0, 0
	for _, de := range ents {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		pid, _, ok := ParseRecordFileName(de.Name())
		if !ok || !de.Type().IsRegular() {
			continue
		}
		path := filepath.Join(p.sessions, de.Name())
		if path == p.recPath || p.al.isAliasPath(path) {
			continue // ours: not read at all
		}
		if named, ok := idx.inboxOf(path); ok && named != inbox {
			hid = true
			continue
		}
		if perPID[pid]++; perPID[pid] > MaxRecordsPerPID || read >= MaxRecords {
			over++
			continue
		}
		read++
		rec, err := p.recordFiles.Get(path)
		if next != nil && err == nil {
			// Indexed only as just read, and only once that parse is kept
			// (settled); a file left out is read on every send.
			if kept, ok := p.recordFiles.Peek(path); ok && kept.IPCPath == rec.IPCPath {
				next[path] = rec.IPCPath
			}
		}
		if err != nil || (inbox != "" && rec.IPCPath != inbox) {
			continue
		}
		switch Judge(de.Name(), rec, p.facts) {
		case VerdictLive:
			out = append(out, listed{file: path, rec: rec})
		case VerdictDead:
			p.sweep(path, rec)
		}
	}
	if next != nil {
		p.index.Store(&recordIndex{gen: gen, inbox: next})
	}
	p.noteOverCap(over)
	return out, hid, nil
}

// noteOverCap logs and counts (a drop, reason record-limit) the first pass
// that left record files unread, not every pass after it until one reads
// them all again.
func (p *Leg) noteOverCap(over int) {
	if was := p.overCap.Swap(over > 0); over == 0 || was {
		return
	}
	p.log.Warn("qwen records left unread: too many record files", "unread", over,
		"max_per_pid", MaxRecordsPerPID, "max", MaxRecords, "dir", p.sessions)
	// Offered, never waited for: a listing must not wait on the router.
	p.notice(message.Event{Type: message.EventDrop, Drop: &message.Drop{Reason: message.DropRecordLimit}})
}

// inboxOf is the inbox file named when the index was made; false for a
// file it does not know (or no index).
func (x *recordIndex) inboxOf(file string) (string, bool) {
	if x == nil {
		return "", false
	}
	s, ok := x.inbox[file]
	return s, ok
}

func (p *Leg) sweep(path string, rec Record) {
	b, err := safefile.ReadCapped(path, MaxRecordBytes)
	if err != nil {
		return
	}
	again, err := ParseRecord(b)
	if err != nil || !SameIncarnation(rec, again) || Judge(filepath.Base(path), again, p.facts) != VerdictDead {
		return
	}
	if err := os.Remove(path); err == nil {
		p.log.Info("swept the record of a dead qwen session", "pid", rec.PID, "name", rec.Name)
	}
}

// Sessions lists every live, reachable Qwen Code session but ourselves:
// beyond Qwen Code's rules, one whose inbox is listened on by its record's
// own process (anyone of ours may write a record naming any socket).
func (p *Leg) Sessions(ctx context.Context) ([]message.Session, error) {
	recs, _, err := p.readRecords(ctx, "", false)
	if err != nil {
		return nil, err
	}
	res := make([]bool, len(recs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, l := range recs {
		if l.rec.IPCPath == "" || !IsLocalIPCPath(l.rec.IPCPath) {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return nil, ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
			defer cancel()
			err := uds.ProbeHeld(pctx, l.rec.IPCPath, l.rec.holder())
			if errors.Is(err, uds.ErrNotHolder) {
				p.log.Info("qwen record skipped: its inbox belongs to another process", "pid", l.rec.PID, "name", l.rec.Name, "err", err)
			}
			res[i] = ClassifyProbe(err) == ReachAlive
		})
	}
	wg.Wait()
	out := make([]message.Session, 0, len(recs))
	for i, l := range recs {
		if !res[i] {
			continue
		}
		r := l.rec
		s := message.Session{
			Address: addressing.UDS(r.IPCPath), Protocol: message.ProtocolQwen, Name: r.Name, Ref: r.Ref(),
			SessionID: r.SessionID, PID: r.PID, Kind: r.DisplayKind(), Cwd: r.Cwd, Version: r.QwenVersion,
			Reachable: true,
		}
		if r.StartedAt > 0 {
			s.StartedAt = time.UnixMilli(r.StartedAt).UTC()
		}
		out = append(out, s)
	}
	return out, nil
}

// ErrNoRecord means no live record names the target inbox (and session).
var ErrNoRecord = errors.New("no live qwen session record for that address")

// target re-reads the registry for the record at path (and session id when
// known), as Qwen Code asks before each send: /clear swaps the id
// (docs/protocols/qwen-cross-session.md#records).
func (p *Leg) target(ctx context.Context, path, sessionID, name string) (Record, error) {
	var found []Record
	for _, useIndex := range []bool{true, false} {
		recs, hid, err := p.readRecords(ctx, path, useIndex)
		if err != nil {
			return Record{}, err
		}
		found = found[:0]
		for _, l := range recs { // all name path
			found = append(found, l.rec)
		}
		for _, r := range found {
			if sessionID != "" && r.SessionID == sessionID {
				return r, nil
			}
		}
		if sessionID == "" {
			// No session id: the one record of that inbox, or the one of
			// several (a gateway's inbox holds its aliases' records too)
			// that has the name asked for. Never a guess: a reply to a name
			// no record there holds must not reach another session.
			var named []Record
			for _, r := range found {
				if name != "" && r.Name == name {
					named = append(named, r)
				}
			}
			switch {
			case len(found) == 1:
				return found[0], nil
			case len(named) == 1:
				return named[0], nil
			}
		}
		if !hid {
			break // every file was read already
		}
		// Not there as asked: the index may hide a record edited in place
		// to name this inbox, so every file is read once more.
	}
	if len(found) == 1 {
		// The id was swapped under the same process: send to the current one.
		return found[0], nil
	}
	if sessionID == "" && len(found) > 1 {
		return Record{}, fmt.Errorf("%w: %s holds %d sessions and none is named %q", ErrNoRecord, path, len(found), name)
	}
	return Record{}, fmt.Errorf("%w: %s", ErrNoRecord, path)
}
