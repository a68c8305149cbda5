package federation

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/message"
)

// maxSessions caps one host's roster entry.
const maxSessions = 4096

// rosterEntry is one host's value in the roster bucket.
type rosterEntry struct {
	V        int               `json:"v"`
	Host     string            `json:"host"`
	Sessions []message.Session `json:"sessions"`
	seal                       // signed by Host
}

// hostEntry is another host's entry as this one last heard it.
type hostEntry struct {
	sessions []message.Session // as that host listed them
	seen     time.Time         // local time of the last put heard
}

// PublishSessions puts this host's sessions in the shared roster when they
// changed since the last put. Aliases and other hosts' sessions are left
// out: each host publishes only what it reaches itself.
func (n *Node) PublishSessions(ctx context.Context, local []message.Session) error {
	own := make([]message.Session, 0, len(local))
	for _, s := range local {
		if s.AliasOf != "" || s.Protocol == message.ProtocolFederation || (s.Host != "" && s.Host != n.cfg.Host) || !n.publishes(s) {
			continue
		}
		s.Host = n.cfg.Host
		own = append(own, s)
	}
	if len(own) > maxSessions {
		own = own[:maxSessions]
	}
	r := rosterEntry{V: Version, Host: n.cfg.Host, Sessions: own}
	b, err := jsonx.Marshal(r)
	if err != nil {
		return err
	}
	n.mu.Lock()
	same := n.mine != nil && string(n.mine) == string(b)
	n.mine, n.published, n.mineEntry = b, own, r
	n.mu.Unlock()
	if same {
		return nil
	}
	if err := n.putRoster(ctx, r); err != nil {
		// Not published: the next call with the same sessions puts again
		// rather than finding them unchanged.
		n.mu.Lock()
		if string(n.mine) == string(b) {
			n.mine = nil
		}
		n.mu.Unlock()
		return err
	}
	return nil
}

// firstEntry puts a signed entry before anything is sent: the hosts this
// one sends to learn its key from it, even before Serve lists its
// sessions. A gateway restarted (after a crash) finds its last entry still
// there and leaves it until Serve lists its sessions: an empty one would
// make the other hosts fail sends to them meanwhile. Both steps are
// retried: a bucket whose stream leader is still being elected answers
// no one for a moment, and a gateway starting beside a cluster that just
// started must not give up on that.
func (n *Node) firstEntry(ctx context.Context) error {
	found, err := retry(ctx, n.cfg.Clock, func(ctx context.Context) (bool, error) {
		_, err := n.roster.Get(ctx, n.cfg.Host)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil || found {
		return err
	}
	_, err = retry(ctx, n.cfg.Clock, func(ctx context.Context) (struct{}, error) { return struct{}{}, n.PublishSessions(ctx, nil) })
	return err
}

// putRoster signs r afresh and puts it: each put is signed when made, so
// an old one put again by someone else is told apart.
func (n *Node) putRoster(ctx context.Context, r rosterEntry) error {
	b, err := n.signer.sign(domainRoster, &r, &r.seal)
	if err != nil {
		return err
	}
	return n.put(ctx, b)
}

// refreshRoster re-puts the last entry, so other hosts keep seeing this one.
func (n *Node) refreshRoster(ctx context.Context) error {
	n.mu.Lock()
	b, r := n.mine, n.mineEntry
	n.mu.Unlock()
	if b == nil {
		return nil
	}
	return n.putRoster(ctx, r)
}

// put writes this host's roster entry b, noting when it last did.
func (n *Node) put(ctx context.Context, b []byte) error {
	if _, err := n.roster.Put(ctx, n.cfg.Host, b); err != nil {
		return err
	}
	n.mu.Lock()
	n.putAt = n.now()
	n.mu.Unlock()
	return nil
}

// watchRoster follows the roster bucket until Close, starting over when
// the watch ends (a reconnect, a leader change).
func (n *Node) watchRoster() {
	defer n.done.Done()
	for n.ctx.Err() == nil {
		if err := n.watchOnce(); err != nil && n.ctx.Err() == nil {
			n.log.Warn("federation roster watch ended", "err", err)
		}
		_ = clock.Sleep(n.ctx, n.cfg.Clock, 100*time.Millisecond)
	}
}

func (n *Node) watchOnce() error {
	w, err := n.roster.WatchAll(n.ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-n.ctx.Done():
			return nil
		case <-n.relink:
			return nil // a watch across a long cut may not resume: start over
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("watch closed")
			}
			if e != nil {
				n.heard(e)
			}
		}
	}
}

// heard applies one roster update. An entry that does not check out is
// dropped and counted, and leaves that host's last good entry to age out.
func (n *Node) heard(e jetstream.KeyValueEntry) {
	host := e.Key()
	if host == n.cfg.Host {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		n.mu.Lock()
		delete(n.others, host)
		n.mu.Unlock()
		return
	}
	var r rosterEntry
	switch {
	case len(e.Value()) > MaxEnvelope:
		n.drops.add(ReasonOversized)
		return
	case json.Unmarshal(e.Value(), &r) != nil:
		n.drops.add(ReasonMalformed)
		return
	case r.V != Version:
		n.drops.add(ReasonVersion)
		return
	case r.Host != host || !ValidHost(host) || len(r.Sessions) > maxSessions:
		n.drops.add(ReasonMisrouted)
		return
	}
	if reason := n.checkSeal(domainRoster, &r, &r.seal, host, e.Created(), true); reason != 0 {
		n.drops.add(reason) // and the host's last good entry ages out
		return
	}
	n.mu.Lock()
	n.others[host] = hostEntry{sessions: r.Sessions, seen: n.now()}
	n.mu.Unlock()
}

// Sessions lists the other hosts' sessions heard within the roster TTL, as
// the federation leg shows them: protocol federation, Host set, name
// NAME.HOST, address NAME@HOST, no local process. A session whose name would not parse in
// that address is left out. While this host is cut off (see listed), the
// last entries heard stay listed, reachable false past the TTL.
func (n *Node) Sessions() []message.Session {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []message.Session
	now := n.now()
	for host, h := range n.others {
		show, fresh := n.listed(h, now)
		if !show {
			continue
		}
		for _, s := range h.sessions {
			if f, ok := federated(host, s); ok {
				f.Reachable = f.Reachable && fresh
				out = append(out, f)
			}
		}
	}
	slices.SortFunc(out, func(a, b message.Session) int {
		if a.Address != b.Address {
			if a.Address < b.Address {
				return -1
			}
			return 1
		}
		if a.SessionID < b.SessionID {
			return -1
		}
		return 0
	})
	return out
}

// listed says whether another host's entry h is listed at now, and
// whether it is fresh (heard within the TTL). A stale entry means that
// host is gone when this host's link has been up since before that entry
// was heard (a later heartbeat would have been heard too), or for a TTL
// and a heartbeat since it came back (the roster watch has caught up).
// Otherwise this host is the one that was cut off and cannot tell: the
// host stays listed, its sessions unreachable, and a send to them is kept
// until the link is back.
func (n *Node) listed(h hostEntry, now time.Time) (show, fresh bool) {
	if now.Sub(h.seen) <= n.cfg.RosterTTL {
		return true, true
	}
	up := n.upSince.Load()
	if up == 0 {
		return true, false
	}
	upAt := time.Unix(0, up)
	return upAt.After(h.seen) && now.Sub(upAt) < n.cfg.RosterTTL+n.cfg.heartbeat(), false
}

// federated is s as this host lists it: named NAME.HOST (a name both
// CLIs' registries accept, so the bridge can alias it on the local legs)
// and addressed NAME@HOST.
func federated(host string, s message.Session) (message.Session, bool) {
	a, err := addressing.Parse(s.Name + "@" + host)
	if s.Name == "" || err != nil || a.Kind != addressing.KindName {
		return message.Session{}, false
	}
	if n, err := addressing.Parse(s.Name + "." + host); err != nil || n.Kind != addressing.KindName {
		return message.Session{}, false
	}
	s.Name = s.Name + "." + host
	s.Address, s.Host, s.Protocol, s.PID, s.AliasOf = a.String(), host, message.ProtocolFederation, 0, ""
	return s, true
}

// Origin returns the session behind a federation address (NAME@HOST) as
// its host listed it, picked by session id when several share the name.
func (n *Node) Origin(address, sessionID string) (message.Session, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now()
	var found message.Session
	ok := false
	for host, h := range n.others {
		if show, _ := n.listed(h, now); !show {
			continue
		}
		for _, s := range h.sessions {
			f, fok := federated(host, s)
			if !fok || f.Address != address {
				continue
			}
			if sessionID != "" && s.SessionID == sessionID {
				s.Host = host
				return s, true
			}
			if !ok {
				s.Host = host
				found, ok = s, true
			}
		}
	}
	return found, ok && sessionID == ""
}
