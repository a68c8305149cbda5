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
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/transport/uds"
)

// listed is one live record and its file.
type listed struct {
	file string
	rec  Record
}

// records reads every live record but our own that keep accepts (nil:
// all); dead ones are swept after a re-read proves them the same
// incarnation. Only the records kept are judged, which takes reads of
// /proc: a send judges its target's alone.
func (p *Peer) records(keep func(Record) bool) ([]listed, error) {
	// The directory is read again only once it changed; each record file
	// is looked at (and read again once changed) every time all the same.
	ents, err := p.registry.List()
	if err != nil {
		return nil, err
	}
	var out []listed
	for _, de := range ents {
		if _, _, ok := ParseRecordFileName(de.Name()); !ok || !de.Type().IsRegular() {
			continue
		}
		path := filepath.Join(p.sessions, de.Name())
		if path == p.recPath || p.al.isAliasPath(path) {
			continue // ours: not read at all
		}
		rec, err := p.recordFiles.Get(path)
		if err != nil || (keep != nil && !keep(rec)) {
			continue
		}
		switch Judge(de.Name(), rec, p.facts) {
		case VerdictLive:
			out = append(out, listed{file: path, rec: rec})
		case VerdictDead:
			p.sweep(path, rec)
		}
	}
	return out, nil
}

func (p *Peer) sweep(path string, rec Record) {
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
func (p *Peer) Sessions(ctx context.Context) ([]message.Session, error) {
	recs, err := p.records(nil)
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
		sem <- struct{}{}
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
// known), as the spec asks before each send: /clear swaps the id.
func (p *Peer) target(path, sessionID string) (Record, error) {
	recs, err := p.records(func(r Record) bool { return r.IPCPath == path })
	if err != nil {
		return Record{}, err
	}
	var found []Record
	for _, l := range recs {
		if l.rec.IPCPath == path {
			found = append(found, l.rec)
		}
	}
	for _, r := range found {
		if sessionID == "" || r.SessionID == sessionID {
			return r, nil
		}
	}
	if len(found) == 1 {
		// The id was swapped under the same process: send to the current one.
		return found[0], nil
	}
	return Record{}, fmt.Errorf("%w: %s", ErrNoRecord, path)
}
