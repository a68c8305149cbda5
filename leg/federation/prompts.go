package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// Permission prompts across hosts. Each host puts the prompts pending on
// it (and the last few it settled) in the prompts bucket under its host
// name, as a kindPrompts envelope, on every change and every heartbeat, so
// an entry ages out with the roster's TTL. Every other host's leg follows
// the bucket and raises those prompts in its own router as prompts of the
// federation leg, Host set: they are listed, watched and shown to the
// approver as any other, and an answer to one (the CLI, the API, the
// approver) is the leg's Answer: a kindAnswer envelope on the prompt's
// host's inbound subject. That host answers through its own router, whose
// broker lets the first answer win, and sends a kindOutcome back on the
// answering host's receipt subject: applied, or lost to whom.

const (
	promptBucket = "gateway_prompts"
	// maxHostPrompts caps one host's published list; maxSettledShown of it
	// may be recently settled prompts, so others learn who answered.
	maxHostPrompts  = 256
	maxSettledShown = 32
	// maxPromptInput caps a published prompt's tool input; a larger one
	// is replaced by a note (it is shown whole on its own host).
	maxPromptInput = 8 << 10
	// maxPromptSuggestions caps a published prompt's suggestions, encoded:
	// an "always allow" rule may hold a whole command. The first ones that
	// fit are published, so an answer's numbers mean the same everywhere.
	maxPromptSuggestions = 8 << 10
	// maxPromptHosts caps how many other hosts' lists are kept.
	maxPromptHosts = 1024
	// answerWait is how long an answer waits for its outcome, at most.
	answerWait = 30 * time.Second
	// maxAnswering bounds the answers from other hosts applied at once,
	// and maxWaiting the answers of this host waiting for an outcome.
	maxAnswering = 8
	maxWaiting   = 256
)

// validPromptEnvelope checks the fields of the three prompt kinds.
func validPromptEnvelope(e envelope) bool {
	switch e.Kind {
	case kindPrompts:
		if e.From != e.To || e.Answer != nil || e.Outcome != nil || len(e.Prompts) > maxHostPrompts {
			return false
		}
		for _, p := range e.Prompts {
			if !validPrompt(p) {
				return false
			}
		}
		return true
	case kindAnswer:
		a := e.Answer
		return a != nil && e.Prompts == nil && e.Outcome == nil && validID(a.ID) && validID(a.Prompt) &&
			validID(a.SessionID) && validID(a.RequestID) &&
			(a.Answer.Behavior == message.BehaviorAllow || a.Answer.Behavior == message.BehaviorDeny)
	case kindOutcome:
		o := e.Outcome
		if o == nil || e.Prompts != nil || e.Answer != nil || !validID(o.ID) {
			return false
		}
		switch o.Result {
		case outcomeSettled:
			return o.State == message.PermissionAnswered || o.State == message.PermissionCancelled
		case outcomeAnswered, outcomeInvalid, outcomeUnknown, outcomeExpired, outcomeFailed:
			return true
		}
	}
	return false
}

func validPrompt(p message.PermissionRequest) bool {
	switch p.State {
	case message.PermissionPending, message.PermissionAnswered, message.PermissionCancelled:
	default:
		return false
	}
	return validID(p.ID) && validID(p.SessionID) && validID(p.RequestID) && len(p.ToolName) <= maxID
}

type promptKey struct{ session, request string }

// hostPrompts is another host's list as this one last heard it.
type hostPrompts struct {
	byKey map[promptKey]message.PermissionRequest
	seen  time.Time
}

// promptState is the node's share of prompts across hosts.
type promptState struct {
	kv       jetstream.KeyValue
	self     string                              // this host
	outcomes *bounded.Map[string, answerOutcome] // origin/answer id -> its outcome, for an answer offered again
	slots    chan struct{}                       // bounds the answers being applied
	bg       sync.WaitGroup                      // they are waited for by ServeRouter

	mu       sync.Mutex
	router   Router // this host's, once ServeRouter runs
	others   map[string]*hostPrompts
	waiting  map[string]waiter // answer id -> the Answer waiting for its outcome
	applying map[string]bool   // origin/answer id being applied
}

type waiter struct {
	host string
	ch   chan answerOutcome
}

func (s *promptState) init(self string) {
	s.self = self
	s.outcomes = bounded.NewMap[string, answerOutcome](4096)
	s.slots = make(chan struct{}, maxAnswering)
	s.others, s.waiting, s.applying = map[string]*hostPrompts{}, map[string]waiter{}, map[string]bool{}
}

var _ leg.Prompter = (*Leg)(nil)

// onHost qualifies who answered a prompt with the host the answer came
// from, once: "cli" becomes "cli on host b".
func onHost(by, host string) string {
	switch {
	case strings.Contains(by, " on host "), strings.HasSuffix(by, "(seen on host "+host+")"):
		return by
	case by == "":
		return "someone on host " + host
	case by == "remote":
		return "claude.ai (seen on host " + host + ")"
	}
	return by + " on host " + host
}

// ---- This host's prompts, published.

// publishPrompts keeps this host's entry in the prompts bucket current:
// on every change of r's prompts and every heartbeat, until ctx ends or
// the node closes.
func (n *Node) publishPrompts(ctx context.Context, r Router) {
	t := clock.NewTicker(n.cfg.Clock, n.cfg.heartbeat())
	defer t.Stop()
	var last string
	put := func(force bool) {
		list := n.ownPrompts(r)
		key, _ := jsonx.Marshal(list)
		if !force && string(key) == last {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, n.cfg.heartbeat())
		defer cancel()
		if err := n.putPrompts(pctx, list); err != nil {
			if ctx.Err() == nil && n.ctx.Err() == nil {
				n.log.Warn("federation prompts not published", "err", err)
			}
			last = ""
			return
		}
		last = string(key)
	}
	// The signal is taken before each read of the prompts, so a change
	// made while they are read and put is put next.
	changed := r.PermissionsChanged()
	put(true)
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.ctx.Done():
			return
		case <-changed:
			changed = r.PermissionsChanged()
			put(false)
		case <-t.C:
			changed = r.PermissionsChanged()
			put(true)
		}
	}
}

// ownPrompts lists the prompts r has of this host's own legs, pending
// first (oldest first), then the last few settled, each as other hosts
// are shown it.
func (n *Node) ownPrompts(r Router) []message.PermissionRequest {
	out := []message.PermissionRequest{}
	for _, p := range r.Permissions() {
		if len(out) == maxHostPrompts-maxSettledShown {
			break
		}
		if p.Leg != message.ProtocolFederation {
			out = append(out, n.forWire(p))
		}
	}
	var settled []message.PermissionRequest
	for _, p := range r.SettledPermissions() {
		if p.Leg != message.ProtocolFederation {
			settled = append(settled, n.forWire(p))
		}
	}
	return append(out, settled[max(0, len(settled)-maxSettledShown):]...)
}

// forWire is p as other hosts see it: Host set, a large input replaced by
// a note, the suggestions that fit, an answer reduced to who and what. A
// prompt too large for the list would push the host's others out of it.
func (n *Node) forWire(p message.PermissionRequest) message.PermissionRequest {
	p.Host = n.cfg.Host
	if len(p.Input) > maxPromptInput {
		note, _ := json.Marshal(fmt.Sprintf("(an input of %d bytes, shown whole on host %s)", len(p.Input), n.cfg.Host))
		p.Input = note
	}
	if len(p.ToolUseID) > maxID {
		p.ToolUseID = "" // a hook's own claim; Claude Code's are short
	}
	size := 0
	for i, u := range p.Suggestions {
		b, _ := json.Marshal(u)
		if size += len(b); size > maxPromptSuggestions {
			p.Suggestions = p.Suggestions[:i:i]
			break
		}
	}
	if p.Answer != nil {
		p.Answer = &message.PermissionAnswer{Behavior: p.Answer.Behavior, By: p.Answer.By}
	}
	return p
}

// putPrompts writes list as this host's entry; a list over the envelope
// cap loses its newest half until it fits.
func (n *Node) putPrompts(ctx context.Context, list []message.PermissionRequest) error {
	for {
		b, err := n.encode(envelope{Kind: kindPrompts, From: n.cfg.Host, To: n.cfg.Host, Prompts: list})
		if err == nil {
			_, err = n.pr.kv.Put(ctx, n.cfg.Host, b)
			return err
		}
		if len(list) == 0 {
			return err
		}
		list = list[:len(list)/2]
	}
}

// ---- Other hosts' prompts, raised in this host's router.

// watchPrompts follows the prompts bucket until ctx ends or the node
// closes, handing the prompt events it yields to em.
func (l *Leg) watchPrompts(ctx context.Context, em *leg.Emitter) {
	n := l.n
	for ctx.Err() == nil && n.ctx.Err() == nil {
		if err := l.watchPromptsOnce(ctx, em); err != nil && ctx.Err() == nil && n.ctx.Err() == nil {
			n.log.Warn("federation prompts watch ended", "err", err)
		}
		again, t := clock.After(n.cfg.Clock, time.Second)
		select {
		case <-ctx.Done():
		case <-n.ctx.Done():
		case <-again:
		}
		t.Stop()
	}
}

func (l *Leg) watchPromptsOnce(ctx context.Context, em *leg.Emitter) error {
	n := l.n
	w, err := n.pr.kv.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	t := clock.NewTicker(n.cfg.Clock, n.cfg.heartbeat())
	defer t.Stop()
	for {
		var evs []message.Event
		select {
		case <-ctx.Done():
			return nil
		case <-n.ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("watch closed")
			}
			if e != nil {
				evs = n.heardPrompts(e.Key(), e.Operation() == jetstream.KeyValuePut, e.Value(), n.now())
			}
		case now := <-t.C:
			evs = n.pr.sweep(now, n.cfg.RosterTTL)
		}
		for _, ev := range evs {
			if !em.Emit(ctx, ev) {
				return nil
			}
		}
	}
}

// heardPrompts applies one update of the prompts bucket and returns the
// prompt events it means. An entry that does not check out is dropped
// and counted, and leaves that host's last good list to age out.
func (n *Node) heardPrompts(host string, put bool, value []byte, now time.Time) []message.Event {
	if host == n.cfg.Host {
		return nil
	}
	if !put {
		return n.pr.forget(host, now)
	}
	e, reason := parse(value, host)
	if reason == 0 && (e.Kind != kindPrompts || e.From != host) {
		reason = ReasonMisrouted
	}
	if reason == 0 {
		reason = n.checkSeal(domainEnvelope, &e, &e.seal, host, now, false)
	}
	if reason != 0 {
		n.drops.add(reason)
		n.log.Debug("federation prompts dropped", "host", host, "reason", reason.String())
		return nil
	}
	evs, ok := n.pr.apply(host, e.Prompts, now)
	if !ok {
		n.drops.add(ReasonOversized)
	}
	return evs
}

// apply replaces host's list; false when there are too many hosts to keep
// another.
func (s *promptState) apply(host string, list []message.PermissionRequest, now time.Time) ([]message.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.others[host]
	if h == nil {
		if len(s.others) >= maxPromptHosts {
			return nil, false
		}
		h = &hostPrompts{}
		s.others[host] = h
	}
	h.seen = now
	next := make(map[promptKey]message.PermissionRequest, len(list))
	var evs []message.Event
	for _, p := range list {
		k := promptKey{p.SessionID, p.RequestID}
		if _, dup := next[k]; dup {
			continue
		}
		next[k] = p
		old, had := h.byKey[k]
		wasPending := had && old.State == message.PermissionPending
		if (p.State == message.PermissionPending) != wasPending { // raised, or settled
			evs = append(evs, federatedEvent(s.self, host, p, now))
		}
	}
	for k, old := range h.byKey {
		if _, ok := next[k]; !ok && old.State == message.PermissionPending {
			evs = append(evs, withdrawn(host, old, now))
		}
	}
	h.byKey = next
	return evs, true
}

// forget drops host's list, withdrawing what was pending there: the host
// left, or was not heard from within the TTL.
func (s *promptState) forget(host string, now time.Time) []message.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.forgetLocked(host, now)
}

func (s *promptState) forgetLocked(host string, now time.Time) []message.Event {
	h := s.others[host]
	if h == nil {
		return nil
	}
	delete(s.others, host)
	var evs []message.Event
	for _, p := range h.byKey {
		if p.State == message.PermissionPending {
			evs = append(evs, withdrawn(host, p, now))
		}
	}
	return evs
}

// sweep forgets the hosts not heard from within ttl.
func (s *promptState) sweep(now time.Time, ttl time.Duration) []message.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var evs []message.Event
	for host, h := range s.others {
		if now.Sub(h.seen) > ttl {
			evs = append(evs, s.forgetLocked(host, now)...)
		}
	}
	return evs
}

func withdrawn(host string, p message.PermissionRequest, now time.Time) message.Event {
	p.State, p.Answer = message.PermissionCancelled, nil
	return federatedEvent("", host, p, now)
}

// federatedEvent is p, a prompt of host, as the router of host self takes
// it from the federation leg: its own id is the router's to give, and an
// answer from self names who answered as self's own answers do (so the
// approver knows its own).
func federatedEvent(self, host string, p message.PermissionRequest, now time.Time) message.Event {
	p.ID, p.Leg, p.Host = "", message.ProtocolFederation, host
	if p.Answer != nil {
		a := *p.Answer
		if by, ok := strings.CutSuffix(a.By, " on host "+self); ok {
			a.By = by
		} else {
			a.By = onHost(a.By, host)
		}
		p.Answer = &a
	}
	return message.Event{Type: message.EventPermission, Time: now, Leg: message.ProtocolFederation, Permission: &p}
}
