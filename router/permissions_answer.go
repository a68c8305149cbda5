package router

import (
	"context"
	"errors"
	"slices"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// AnswerPermission checks a against the prompt id, has the prompt's leg send
// it, and settles the prompt as answered once the leg says the server took
// it. The first answer wins: a later or concurrent one gets a *message.SettledError
// and never reaches the leg. A leg's failure (a *LegError) leaves the prompt
// pending.
func (r *Router) AnswerPermission(ctx context.Context, id string, a message.PermissionAnswer) (message.PermissionRequest, error) {
	e, req, err := r.perms.get(id)
	if err != nil {
		return message.PermissionRequest{}, err
	}
	if err := message.CheckPending(req); err != nil {
		return req, err
	}
	if err := ValidateAnswer(req, a); err != nil {
		return req, err
	}
	select {
	case e.turn <- struct{}{}:
	case <-ctx.Done():
		return req, ctx.Err()
	}
	defer func() { <-e.turn }()
	r.perms.mu.Lock()
	req = e.req // settled by the answer we waited for, or withdrawn meanwhile
	r.perms.mu.Unlock()
	if err := message.CheckPending(req); err != nil {
		return req, err
	}
	l, ok := r.Leg(req.Leg)
	p, isPrompter := l.(leg.Prompter)
	if !ok || !isPrompter {
		return req, &LegError{Leg: req.Leg, Op: "answer", Err: message.ErrNotPrompter}
	}
	a = cloneAnswer(a)
	if err := p.Answer(ctx, req, a); err != nil {
		if ps := (*message.PromptSettledError)(nil); errors.As(err, &ps) { // the leg saw it settled at its session first
			err = &message.SettledError{State: ps.State, Behavior: ps.Behavior, By: ps.By}
		}
		var se *message.SettledError
		if errors.As(err, &se) {
			return r.settledByLeg(e, *se)
		}
		return req, &LegError{Leg: req.Leg, Op: "answer", Err: err}
	}
	r.perms.mu.Lock()
	switch e.req.State {
	case message.PermissionPending:
	case message.PermissionAnswered:
		// The leg saw the server echo an answer while ours was on its way:
		// the server took one, and it holds the first it got. Ours was
		// accepted, so it is not an error, but the echo already settled it.
		req = e.req
		r.perms.mu.Unlock()
		return req, nil
	default:
		// Withdrawn by the session while the answer was on its way.
		req = e.req
		r.perms.mu.Unlock()
		return req, message.CheckPending(req)
	}
	r.perms.settleLocked(e, message.PermissionAnswered, &a)
	req = e.req
	r.perms.mu.Unlock()
	r.hub.Publish(message.Event{Type: message.EventPermission, Leg: req.Leg, Permission: &req})
	return req, nil
}

// settledByLeg settles e as the leg says it already was: a prompt of
// another host that an answer from elsewhere settled first. The answer we
// carried lost; the error says to whom.
func (r *Router) settledByLeg(e *permEntry, se message.SettledError) (message.PermissionRequest, error) {
	r.perms.mu.Lock()
	fresh := e.req.State == message.PermissionPending
	if fresh {
		var a *message.PermissionAnswer
		if se.State == message.PermissionAnswered {
			a = &message.PermissionAnswer{Behavior: se.Behavior, By: se.By}
		}
		r.perms.settleLocked(e, se.State, a)
	}
	req := e.req
	r.perms.mu.Unlock()
	if fresh {
		r.hub.Publish(message.Event{Type: message.EventPermission, Leg: req.Leg, Permission: &req})
	}
	se.ID = req.ID
	return req, &se
}

func cloneAnswer(a message.PermissionAnswer) message.PermissionAnswer {
	a.UpdatedInput = slices.Clone(a.UpdatedInput)
	a.Rules = slices.Clone(a.Rules)
	a.Suggestions = slices.Clone(a.Suggestions)
	if a.Answers != nil {
		m := make(map[string][]string, len(a.Answers))
		for k, v := range a.Answers {
			m[k] = slices.Clone(v)
		}
		a.Answers = m
	}
	return a
}
