package remote

import (
	"context"
	"fmt"
	"slices"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/transport/remote/stream"
)

func (l *Leg) followsAll() bool { return slices.Contains(l.cfg.Follow, FollowAll) }

func (l *Leg) follows(id string) bool {
	return l.followsAll() || slices.Contains(l.cfg.Follow, id)
}

// Sessions lists the remote sessions: every listed one when following all,
// else the followed ones. The list is refreshed by Run; before the first
// refresh it is fetched here.
func (l *Leg) Sessions(ctx context.Context) ([]message.Session, error) {
	l.mu.Lock()
	listed, at := l.listed, l.listedAt
	l.mu.Unlock()
	if at.IsZero() {
		var err error
		if listed, err = l.refresh(ctx); err != nil {
			return nil, err
		}
	}
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

func (l *Leg) refresh(ctx context.Context) ([]RemoteSession, error) {
	listed, err := l.cfg.API.ListSessions(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listErr = err
	if err != nil {
		return nil, fmt.Errorf("remote leg: list sessions: %w", err)
	}
	l.listed, l.listedAt = listed, l.cfg.Now()
	l.names = aliasNames(listed, l.cfg.Aliases)
	return listed, nil
}
