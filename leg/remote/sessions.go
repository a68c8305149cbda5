package remote

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/message"
)

func (l *Leg) followsAll() bool { return slices.Contains(l.cfg.Follow, FollowAll) }

func (l *Leg) follows(id string) bool {
	if l.followsAll() || slices.Contains(l.cfg.Follow, id) {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.createdLocked(id)
}

// Sessions lists the remote sessions: every listed one when following all,
// else the followed ones. It answers from the last good listing, which Run
// refreshes, marking the sessions stale when the last refresh failed; it
// never waits on the API for longer than ListWait, and only while the leg
// has no listing at all, counted from the first listing's start (so a
// cloud dark since the start costs each caller at most that once). With no
// listing by then, it lists the followed ids.
func (l *Leg) Sessions(ctx context.Context) ([]message.Session, error) {
	l.mu.Lock()
	at := l.listedAt
	l.mu.Unlock()
	if at.IsZero() {
		done := l.refreshing()
		l.mu.Lock()
		wait := l.cfg.ListWait - time.Since(l.listFrom)
		l.mu.Unlock()
		t := time.NewTimer(max(wait, 0))
		select {
		case <-done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	l.mu.Lock()
	listed, at, listErr, busy := l.listed, l.listedAt, l.listErr, l.listing != nil
	l.mu.Unlock()
	if at.IsZero() && listErr != nil && !busy {
		return nil, listErr
	}
	stale := at.IsZero() || listErr != nil
	out := make([]message.Session, 0, len(listed))
	for _, rs := range listed {
		if !l.follows(rs.ID) {
			continue
		}
		out = append(out, l.session(rs))
	}
	// A followed id the list does not show (yet) is still reachable.
	for _, id := range l.cfg.Follow {
		if id != FollowAll && !slices.ContainsFunc(listed, func(rs RemoteSession) bool { return rs.ID == id }) {
			out = append(out, l.session(RemoteSession{ID: id}))
		}
	}
	for i := range out {
		out[i].Stale = stale
	}
	return out, nil
}

func (l *Leg) session(rs RemoteSession) message.Session {
	s := message.Session{
		Address:   bridgeAddr(rs.ID),
		Protocol:  message.ProtocolRemote,
		Name:      l.aliasName(rs.ID),
		Title:     rs.Title,
		Ref:       addressing.Ref(rs.ID),
		SessionID: rs.ID,
		Kind:      "remote",
		Status:    rs.Status,
		Reachable: rs.Status != "archived",
		StartedAt: rs.Created,
	}
	l.mu.Lock()
	if f, ok := l.links[rs.ID]; ok {
		s.Kind = "remote-live"
		if f.link.State == stream.LinkGaveUp {
			s.Kind = "remote"
		}
	}
	l.mu.Unlock()
	return s
}

// refreshing returns a channel closed when the listing under way ends,
// starting one when none is. Sessions and Run share it, so a slow API has
// at most one listing in flight, each bounded by ListTimeout.
func (l *Leg) refreshing() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.listing == nil {
		done := make(chan struct{})
		l.listing = done
		if l.listFrom.IsZero() {
			l.listFrom = time.Now()
		}
		go func() {
			ctx, cancel := context.WithTimeout(l.listCtx, l.cfg.ListTimeout)
			defer cancel()
			err := l.refresh(ctx)
			if err != nil && l.listCtx.Err() == nil {
				l.log.Warn("listing remote sessions failed", "err", err)
			}
			l.mu.Lock()
			l.listing = nil
			l.mu.Unlock()
			close(done)
		}()
	}
	return l.listing
}

// refresh lists the sessions and keeps the list when it worked; the
// failure is kept either way (Ready reports it, Sessions marks stale).
func (l *Leg) refresh(ctx context.Context) error {
	listed, err := l.cfg.API.ListSessions(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.listErr = fmt.Errorf("remote leg: list sessions: %w", err)
		return l.listErr
	}
	l.listErr = nil
	l.listed, l.listedAt = listed, l.cfg.Now()
	l.names = aliasNames(listed, l.cfg.Aliases)
	return nil
}
