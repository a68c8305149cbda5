package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// DefaultListTimeout is Config.ListTimeout's default.
const DefaultListTimeout = 2 * time.Second

// Sessions lists every reachable session on every leg, sorted by protocol
// then name. The legs are listed at once, each within ListTimeout; a leg
// that fails to list is logged and left out, one that times out is shown
// from its last listing, marked stale.
func (r *Router) Sessions(ctx context.Context) []message.Session {
	lists := make([][]message.Session, len(r.legs))
	var wg sync.WaitGroup
	for i, l := range r.legs {
		wg.Go(func() { lists[i] = r.listLeg(ctx, l) })
	}
	wg.Wait()
	var all []message.Session
	for _, ss := range lists {
		all = append(all, ss...)
	}
	for i := range all {
		if all[i].Host == "" && !r.abilities[all[i].Protocol].OtherHosts {
			all[i].Host = r.cfg.Host
		}
	}
	// A caller gone mid-listing may have cut the legs' probes short (they
	// leave out what they could not probe): its list is its own, never
	// the roster other callers resolve against.
	if ctx.Err() == nil {
		defer func() {
			r.mu.Lock()
			r.roster, r.rosterAt = all, r.cfg.Clock.Now()
			r.mu.Unlock()
		}()
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Protocol != all[j].Protocol {
			return all[i].Protocol < all[j].Protocol
		}
		if all[i].Name != all[j].Name {
			return all[i].Name < all[j].Name
		}
		return all[i].Address < all[j].Address
	})
	return all
}

// listLeg is one leg's part of Sessions: its sessions, and the aliases of
// remote sessions it publishes (alias_of says what they stand for; those
// of local sessions stay hidden).
func (r *Router) listLeg(ctx context.Context, l leg.Leg) []message.Session {
	lctx, cancel := context.WithTimeout(ctx, r.cfg.ListTimeout)
	defer cancel()
	ss, err := l.Sessions(lctx)
	if err != nil {
		if ctx.Err() == nil && lctx.Err() != nil {
			r.mu.Lock()
			last := slices.Clone(r.lastList[l.Name()])
			r.mu.Unlock()
			r.log.Warn("listing sessions timed out; showing the last listing", "leg", l.Name(), "timeout", r.cfg.ListTimeout, "sessions", len(last))
			for i := range last {
				last[i].Stale = true
			}
			return last
		}
		r.log.Warn("listing sessions failed", "leg", l.Name(), "err", err)
		return nil
	}
	if al, ok := l.(leg.AliasLister); ok {
		for _, a := range al.Aliases() {
			if strings.HasPrefix(a.AliasOf, "bridge:") {
				ss = append(ss, a)
			}
		}
	}
	if ctx.Err() == nil { // see Sessions
		r.mu.Lock()
		r.lastList[l.Name()] = ss
		r.mu.Unlock()
	}
	return ss
}

// ErrNoLeg means no leg reaches an address that parsed fine.
var ErrNoLeg = errors.New("no leg reaches this address")

// Resolve finds the session and the leg for an address string. It resolves
// against the roster listed within RosterTTL when there is one, and lists
// afresh when that fails or finds the address outside the roster, so a
// session that just started or left is seen. A bridge:<id> naming a local
// Claude Code session's bridgeSessionId resolves to that session, reached
// over its socket.
func (r *Router) Resolve(ctx context.Context, to string) (leg.Leg, message.Session, error) {
	return r.resolve(ctx, to, true)
}

// resolveCloud is Resolve without the local bridgeSessionId match: for
// what only the cloud's copy of a session takes (controls, its info, its
// title), a bridge:<id> is the remote session.
func (r *Router) resolveCloud(ctx context.Context, to string) (leg.Leg, message.Session, error) {
	return r.resolve(ctx, to, false)
}

func (r *Router) resolve(ctx context.Context, to string, localBridge bool) (leg.Leg, message.Session, error) {
	a, err := addressing.Parse(to)
	if err != nil {
		return nil, message.Session{}, err
	}
	if a.Kind == addressing.KindPipe {
		// A Windows pipe parses everywhere but is dialable only there.
		if err := a.Dialable(); err != nil {
			return nil, message.Session{}, fmt.Errorf("%s: %w", to, err)
		}
	}
	if cached, ok := r.cachedRoster(); ok {
		l, s, inRoster, err := r.resolveIn(ctx, a, cached, localBridge)
		if err == nil && inRoster {
			return l, s, nil
		}
	}
	l, s, _, err := r.resolveIn(ctx, a, r.Sessions(ctx), localBridge)
	return l, s, err
}

// ResolveFresh is Resolve against a listing made now, never a cached one:
// for a caller that knows a session may have just restarted under the
// same name.
func (r *Router) ResolveFresh(ctx context.Context, to string) (leg.Leg, message.Session, error) {
	a, err := addressing.Parse(to)
	if err != nil {
		return nil, message.Session{}, err
	}
	l, s, _, err := r.resolveIn(ctx, a, r.Sessions(ctx), true)
	return l, s, err
}

func (r *Router) cachedRoster() ([]message.Session, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rosterAt.IsZero() || r.cfg.Clock.Now().Sub(r.rosterAt) > r.cfg.RosterTTL {
		return nil, false
	}
	return r.roster, true
}

func (r *Router) resolveIn(ctx context.Context, a addressing.Address, sessions []message.Session, localBridge bool) (leg.Leg, message.Session, bool, error) {
	// Candidates and sessions are kept side by side, not keyed by address:
	// several Qwen sessions of one process share one inbox address and are
	// told apart only by their session id.
	var local, others []message.Session
	for _, s := range sessions {
		switch {
		case s.AliasOf != "": // an alias resolves to what it stands for, not to itself
		case r.abilities[s.Protocol].OtherHosts:
			others = append(others, s)
		default:
			local = append(local, s)
		}
	}
	cands, listed := candidates(local, func(s message.Session) string { return s.Name })
	c, err := addressing.ResolveContext(ctx, a, cands, r.cfg.DID)
	var nf *addressing.NotFoundError
	if name, ok := strings.CutSuffix(a.Name, "@"+r.cfg.Host); ok && r.cfg.Host != "" && a.Kind == addressing.KindName && errors.As(err, &nf) {
		// NAME@HOST naming this host, as other hosts list its sessions.
		if own, perr := addressing.Parse(name); perr == nil && own.Kind == addressing.KindName {
			own.Ref = a.Ref
			if c2, err2 := addressing.Resolve(own, cands); err2 == nil {
				c, err = c2, nil
			}
		}
	}
	if errors.As(err, &nf) && a.Kind == addressing.KindName {
		// An address that parses as a name (hosted:NAME, mcp:NAME) is the
		// session listed under it, as `gateway sessions` shows it.
		for _, s := range local {
			if s.Address == a.Name {
				if l, ok := r.Leg(s.Protocol); ok {
					return l, s, true, nil
				}
			}
		}
		// A name no session has now may be one a leg still answers for
		// (an MCP client that just left: its receipt says so).
		for _, l := range r.legs {
			if cl, ok := l.(leg.Claimer); ok && leg.AbilitiesOf(l).ClaimsLeftNames && cl.Claims(a) {
				return l, message.Session{Address: a.String(), Name: a.Name, Protocol: l.Name()}, false, nil
			}
		}
	}
	if errors.As(err, &nf) && len(others) > 0 && (a.Kind == addressing.KindName || a.Kind == addressing.KindRef) {
		// Local first: another host's session is a candidate only when no
		// local one matches.
		return r.resolveOther(a, others, nf)
	}
	if err != nil {
		if errors.As(err, &nf) && a.Kind == addressing.KindName && strings.Contains(a.Name, "@") && !r.federated() {
			err = fmt.Errorf("%w (federation is off: NAME@HOST reaches another host's session only with serve --federation)", err)
		}
		return nil, message.Session{}, false, err
	}
	if localBridge && c.Address.Kind == addressing.KindBridge {
		if l, s, ok, err := r.bridgeLocal(c.Address, local); ok || err != nil {
			return l, s, ok, err
		}
	}
	if i := slices.Index(cands, c); i >= 0 {
		if l, ok := r.Leg(listed[i].Protocol); ok {
			return l, listed[i], true, nil
		}
	}
	// Not in any roster: a leg may still claim the raw address.
	for _, l := range r.legs {
		if cl, ok := l.(leg.Claimer); ok && cl.Claims(c.Address) {
			return l, message.Session{Address: c.Address.String(), Protocol: l.Name()}, false, nil
		}
	}
	if c.Address.Kind == addressing.KindBridge {
		return nil, message.Session{}, false, fmt.Errorf("%w: %s (remote sessions need `gateway serve` with remote credentials: --remote-token-file, --remote-session-key-file or --remote-claude-credentials)", ErrNoLeg, c.Address)
	}
	return nil, message.Session{}, false, fmt.Errorf("%w: %s", ErrNoLeg, c.Address)
}

// bridgeLocal finds the local session whose bridgeSessionId is a's id
// (a signed-in Claude Code session's cloud address, which the session also
// answers on its socket: docs/protocols/claude-peer-socket.md#cloud-routing-and-bridge-addresses). Two local sessions claiming one id
// are ambiguous, never a guess.
func (r *Router) bridgeLocal(a addressing.Address, local []message.Session) (leg.Leg, message.Session, bool, error) {
	var hit []message.Session
	for _, s := range local {
		if s.BridgeSessionID == a.ID && !r.abilities[s.Protocol].CloudSessions {
			hit = append(hit, s)
		}
	}
	switch len(hit) {
	case 0:
		return nil, message.Session{}, false, nil
	case 1:
		if l, ok := r.Leg(hit[0].Protocol); ok {
			return l, hit[0], true, nil
		}
		return nil, message.Session{}, false, nil
	}
	forms := make([]string, len(hit))
	for i, s := range hit {
		forms[i] = s.Address
	}
	return nil, message.Session{}, false, &addressing.AmbiguousError{Kind: a.Kind, Query: a.String(), Candidates: forms}
}

// resolveOther resolves a name or ref no local session matched among other
// hosts' sessions (the federation leg's: named NAME.HOST, addressed
// NAME@HOST). It tries, in order, the address (NAME@HOST, NAME@HOST [ref],
// or a ref), the listed name (NAME.HOST) and the bare name (NAME, which
// several hosts may share). An ambiguity lists NAME@HOST [ref] forms,
// which each resolve to one session.
func (r *Router) resolveOther(a addressing.Address, others []message.Session, local *addressing.NotFoundError) (leg.Leg, message.Session, bool, error) {
	byAddr, listed := candidates(others, func(s message.Session) string { return s.Address })
	tiers := []func(message.Session) string{
		func(s message.Session) string { return s.Address },
		func(s message.Session) string { return s.Name },
		func(s message.Session) string { return strings.TrimSuffix(s.Name, "."+s.Host) },
	}
	if a.Kind == addressing.KindRef {
		tiers = tiers[:1]
	}
	for _, name := range tiers {
		cands, _ := candidates(others, name)
		c, err := addressing.Resolve(a, cands)
		var amb *addressing.AmbiguousError
		switch {
		case err == nil:
			i := slices.Index(cands, c)
			l, ok := r.Leg(listed[i].Protocol)
			if !ok {
				return nil, message.Session{}, false, fmt.Errorf("%w: %s", ErrNoLeg, listed[i].Address)
			}
			return l, listed[i], true, nil
		case errors.As(err, &amb):
			forms := make([]string, 0, len(amb.Candidates))
			for _, f := range amb.Candidates {
				// Each form picks one candidate of this tier; say it as
				// that session's address form instead.
				if p, perr := addressing.Parse(f); perr == nil {
					if c, cerr := addressing.Resolve(p, cands); cerr == nil {
						f = byAddr[slices.Index(cands, c)].Display()
					}
				}
				forms = append(forms, f)
			}
			return nil, message.Session{}, false, &addressing.AmbiguousError{Kind: a.Kind, Query: a.String(), Candidates: forms}
		}
	}
	// Nothing anywhere: suggest close local names first, then other hosts'.
	out := *local
	out.Suggestions = slices.Clone(out.Suggestions)
	var nf *addressing.NotFoundError
	if _, err := addressing.Resolve(a, byAddr); errors.As(err, &nf) {
		for _, s := range nf.Suggestions {
			if len(out.Suggestions) < maxSuggestions && !slices.Contains(out.Suggestions, s) {
				out.Suggestions = append(out.Suggestions, s)
			}
		}
	}
	return nil, message.Session{}, false, &out
}

// maxSuggestions is addressing's cap on a not-found error's suggestions.
const maxSuggestions = 5

// candidates are the sessions ss as Resolve's candidates, each under the
// name name gives, side by side with the sessions they stand for; a
// session whose address does not parse is left out.
func candidates(ss []message.Session, name func(message.Session) string) ([]addressing.Candidate, []message.Session) {
	cands := make([]addressing.Candidate, 0, len(ss))
	listed := make([]message.Session, 0, len(ss))
	for _, s := range ss {
		ca, err := addressing.Parse(s.Address)
		if err != nil {
			continue
		}
		c := candidateOf(ca, s)
		c.Name = name(s)
		cands = append(cands, c)
		listed = append(listed, s)
	}
	return cands, listed
}

func candidateOf(a addressing.Address, s message.Session) addressing.Candidate {
	return addressing.Candidate{Address: a, Name: s.Name, SessionID: s.SessionID, Protocol: string(s.Protocol), NativeRef: s.NativeRef}
}

// federated says whether a leg reaches other hosts' sessions.
func (r *Router) federated() bool {
	for _, l := range r.legs {
		if r.abilities[l.Name()].OtherHosts {
			return true
		}
	}
	return false
}
