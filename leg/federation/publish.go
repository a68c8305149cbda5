package federation

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/sessiongateway/gateway/message"
)

// checkPublish validates --federation-publish patterns, so a typo stops
// the start instead of hiding every session.
func checkPublish(globs []string) error {
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("federation: --federation-publish %q: %w", g, err)
		}
	}
	return nil
}

// publishes reports whether other hosts may see and reach s: every
// session when no pattern is given, else one whose name matches one.
func (n *Node) publishes(s message.Session) bool {
	if len(n.cfg.Publish) == 0 {
		return true
	}
	for _, g := range n.cfg.Publish {
		if ok, _ := path.Match(g, s.Name); ok {
			return true
		}
	}
	return false
}

// onlyPublished wraps deliver so that a message for a session this host
// does not publish is refused without a delivery: another host names one
// only by guessing, and a raw address (a uds: path of any socket here)
// must not reach what was never offered. The answer is the one for a
// session that does not exist, so it tells nothing. Before this host has
// listed its sessions once (just started: the entry put at Connect, or
// one left from before a restart, says nothing of them), nothing can be
// told: the message waits and is offered again.
func (n *Node) onlyPublished(deliver func(context.Context, message.Message) (message.Receipt, error)) func(context.Context, message.Message) (message.Receipt, error) {
	return func(ctx context.Context, m message.Message) (message.Receipt, error) {
		n.mu.Lock()
		listed, ok := n.shown, false
		for _, s := range n.published {
			if s.Address == m.To && (m.ToSessionID == "" || s.SessionID == m.ToSessionID) && (m.ToName == "" || s.Name == m.ToName) {
				ok = true
				break
			}
		}
		n.mu.Unlock()
		if !listed {
			return message.Receipt{}, errNotListed
		}
		if !ok {
			return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: "no session " + m.To + " on host " + n.cfg.Host}, nil
		}
		return deliver(ctx, m)
	}
}

// errNotListed is a message that came before this host listed its sessions.
var errNotListed = errors.New("federation: this host has not listed its sessions yet")
