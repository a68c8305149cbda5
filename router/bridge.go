package router

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// forward is a message the bridge passed on, remembered (in the bounded
// outbox, with the message) so that what the receiver says about it goes
// back to the original sender.
type forward struct {
	source leg.Leg         // the leg the original arrived on
	in     message.Message // the original, as it arrived at our alias
}

// AliasKind is the registry kind every leg gives the gateway's aliases.
const AliasKind = "gateway-alias"

// bridgeSync publishes every leg's sessions on every other leg that hosts
// aliases, now and every interval, until ctx ends.
func (r *Router) bridgeSync(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		r.syncOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Router) syncOnce(ctx context.Context) {
	all := r.Sessions(ctx)
	for _, l := range r.legs {
		h, ok := l.(leg.AliasHost)
		if !ok {
			continue
		}
		var others []message.Session
		for _, s := range all {
			// Another gateway's aliases are not aliased again: that would
			// let two gateways bounce messages between their bridges.
			if s.Protocol != l.Name() && s.Name != "" && s.Kind != AliasKind && r.bridged(s.Name) {
				others = append(others, s)
			}
		}
		if err := h.SyncAliases(ctx, others); err != nil {
			r.log.Warn("publishing aliases failed", "leg", l.Name(), "err", err)
		}
	}
}

// bridged reports whether the bridge may show a session of this name on
// the other legs.
func (r *Router) bridged(name string) bool {
	if len(r.cfg.BridgeOnly) == 0 {
		return true
	}
	for _, p := range r.cfg.BridgeOnly {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Forward runs the bridge now for in, a message that arrived at an alias
// on source, and returns the forward's first receipt: sent once the
// target leg wrote it, or why it was not (dropped, failed). Later
// receipts reach source's Relay, as the bridge's always do. An alias host
// that must know when the message was written (the federation settles it
// then, before acknowledging it) calls Forward instead of sending an
// EventMessage. A message forwarded again (its host offered it twice) is
// not written twice while the router tracks it: where it stands is
// answered instead.
func (r *Router) Forward(ctx context.Context, source leg.Leg, in message.Message) message.Receipt {
	r.cfg.Metrics.Message(ctx, string(source.Name()), "in")
	r.hub.Publish(message.Event{Type: message.EventMessage, Time: r.cfg.Clock.Now(), Leg: source.Name(), Message: &in})
	return r.bridge(ctx, source, in)
}

// forwardID is the id the bridge forwards in under: the same for the same
// message from the same sender on the same leg, so a receiver that keeps
// settled ids (Qwen Code) answers a second copy with its first verdict.
func forwardID(source leg.Leg, in message.Message) string {
	return uuid.NewSHA1(forwardSpace, []byte(string(source.Name())+"\x00"+in.From+"\x00"+in.ID)).String()
}

var forwardSpace = uuid.MustParse("6f1d3c1e-5a8b-4c2e-9a57-0b8f2f4d7e11")

// bridge forwards a message that arrived at an alias to the session the
// alias stands for, sent from the alias of its sender on that leg, and
// returns the forward's first receipt.
func (r *Router) bridge(ctx context.Context, source leg.Leg, in message.Message) message.Receipt {
	if err := r.hopCheck(ctx, source, &in); err != nil { // hop guard (router/hop.go): appends our token or drops
		var he *HopError
		errors.As(err, &he)
		return message.Receipt{MsgID: in.ID, Status: message.StatusDropped, DropReason: he.Reason, Reason: err.Error()}
	}
	fail := func(reason string) message.Receipt {
		rc := message.Receipt{MsgID: in.ID, Status: message.StatusFailed, Reason: reason}
		if h, ok := source.(leg.AliasHost); ok {
			h.Relay(ctx, in, rc)
		}
		r.log.Info("bridged message not forwarded", "msg_id", in.ID, "to", in.AliasOf, "reason", reason)
		return rc
	}
	id := forwardID(source, in)
	if snap, err := r.Message(id); err == nil && snap.Status != message.StatusFailed {
		return message.Receipt{MsgID: in.ID, Status: snap.Status}
	}
	targetLeg, target, err := r.resolveAlias(ctx, in)
	if err != nil {
		return fail(err.Error())
	}
	if !r.bridged(target.Name) {
		return fail("the bridge does not reach " + target.Name)
	}
	if err := forwardable(targetLeg, in.Attachments); err != nil {
		return fail(err.Error())
	}
	sender := r.senderOf(ctx, source, in)
	m := message.Message{
		ID: id, To: target.Address, ToName: target.Name, ToPID: target.PID,
		ToSessionID: target.SessionID, Body: in.Body, Mode: in.Mode, FromName: sender.Name,
		HopChain: in.HopChain, Attachments: in.Attachments, Protocol: targetLeg.Name(), Time: r.cfg.Clock.Now(), Unpaced: in.Unpaced,
	}
	var sendAs func(ctx context.Context, m message.Message) (message.Receipt, error)
	if host, ok := targetLeg.(leg.AliasHost); ok {
		sendAs = func(ctx context.Context, m message.Message) (message.Receipt, error) {
			return host.SendAs(ctx, sender, m)
		}
	} else {
		// A leg without aliases (the remote leg) is told who sent it, so
		// that its answer can come back through the sender's alias.
		m.From, m.FromSession = sender.Address, sender.SessionID
		sendAs = targetLeg.Send
	}
	rc := r.dispatch(ctx, targetLeg, m, &forward{source: source, in: in}, sendAs, "bridged")
	// Debug, as a direct send's: a line per message at info costs a busy
	// bridge more than its guard checks (and the trace, metrics and
	// events say as much).
	r.log.Debug("bridged message", "from", sender.Name, "from_leg", source.Name(), "to", target.Name, "to_leg", targetLeg.Name(), "msg_id", m.ID)
	rc.MsgID = in.ID
	return rc
}

// forwardable says whether a bridged message's files can go on to leg:
// every one arrived (none refused on the way in) and the leg carries files.
// Otherwise the message is not forwarded and its sender is told why.
func forwardable(l leg.Leg, atts []message.Attachment) error {
	for _, a := range atts {
		if a.Refused != "" {
			return fmt.Errorf("attachment %q was refused on arrival (%s), so the message is not forwarded without it", a.FileName, a.Refused)
		}
	}
	return carries(l, atts)
}

// senderOf finds the session that sent in on its leg, for its name and
// address: in the router's recent listing first (a leg's own listing can
// mean probing every session's socket, on every forward), then the leg's;
// when neither lists it, what the message claims.
func (r *Router) senderOf(ctx context.Context, source leg.Leg, in message.Message) message.Session {
	match := func(ss []message.Session) (message.Session, bool) {
		for _, s := range ss {
			if s.Protocol == source.Name() && s.AliasOf == "" && s.Address == in.From && (in.FromName == "" || s.Name == in.FromName) {
				return s, true
			}
		}
		return message.Session{}, false
	}
	if cached, ok := r.cachedRoster(); ok {
		if s, ok := match(cached); ok {
			return s
		}
	}
	if ss, err := source.Sessions(ctx); err == nil {
		if s, ok := match(ss); ok {
			return s
		}
	}
	return message.Session{Address: in.From, Name: in.FromName, Protocol: source.Name(), SessionID: in.FromSession}
}

// resolveAlias finds the session the alias in arrived at stands for. The
// alias gives that session's address (AliasOf) and its session id
// (ToSessionID) or name (ToName): Qwen sessions hosted by one process share
// one inbox address, so the address alone can name several, and the id or
// name picks the one the alias was published for (a Claude alias of a
// name two sessions share is NAME-REF: only the id names it). The id is
// tried first; a name two sessions there share is refused (see pinned).
// Anything else resolves as an address would.
func (r *Router) resolveAlias(ctx context.Context, in message.Message) (leg.Leg, message.Session, error) {
	if in.ToName != "" || in.ToSessionID != "" {
		if cached, ok := r.cachedRoster(); ok {
			// What the recent listing cannot tell is asked afresh.
			if l, s, ok, _ := r.pinned(in, cached); ok {
				return l, s, nil
			}
		}
		if l, s, ok, err := r.pinned(in, r.Sessions(ctx)); ok || err != nil {
			return l, s, err
		}
	}
	return r.Resolve(ctx, in.AliasOf)
}

// pinned is the one listed session at in's AliasOf the alias stands for:
// the one with in's session id, its stable identity, else the one with
// in's name (a Qwen alias's frame names the alias's own id, no session's).
// The name alone never picks between sessions that share it there (twins
// of one process, one of them the session a retiring alias stood for): that
// is an error naming each, not a guess. The bool is false when none matches.
func (r *Router) pinned(in message.Message, sessions []message.Session) (leg.Leg, message.Session, bool, error) {
	a, err := addressing.Parse(in.AliasOf)
	if err != nil {
		return nil, message.Session{}, false, nil
	}
	var byID, byName []message.Session
	for _, s := range sessions {
		if s.AliasOf != "" {
			continue
		}
		if sa, err := addressing.Parse(s.Address); err != nil || sa != a {
			continue
		}
		switch {
		case in.ToSessionID != "" && s.SessionID == in.ToSessionID:
			byID = append(byID, s)
		case in.ToName != "" && s.Name == in.ToName:
			byName = append(byName, s)
		}
	}
	hit, amb := byID, &addressing.AmbiguousError{Kind: addressing.KindRef, Query: addressing.Ref(in.ToSessionID)}
	if len(hit) == 0 {
		hit, amb = byName, &addressing.AmbiguousError{Kind: addressing.KindName, Query: in.ToName}
	}
	switch len(hit) {
	case 0:
		return nil, message.Session{}, false, nil
	case 1:
		l, ok := r.Leg(hit[0].Protocol)
		return l, hit[0], ok, nil
	}
	for _, s := range hit {
		amb.Candidates = append(amb.Candidates, candidateOf(a, s).Display())
	}
	return nil, message.Session{}, false, fmt.Errorf("cannot tell which session at %s the alias stands for: %w", in.AliasOf, amb)
}
