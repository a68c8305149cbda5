package router

import (
	"context"
	"fmt"
	"time"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// StartSession starts a session on the leg that starts sessions (the
// hosted leg). Its refusals (message.ErrBadStart, ErrTooManyHosted,
// ErrAgentMissing) come back as they are: they are the caller's to fix.
func (r *Router) StartSession(ctx context.Context, spec message.StartSpec) (message.Session, error) {
	if spec.Agent == message.AgentClaudeBG {
		return r.dispatchAgent(ctx, spec)
	}
	for _, l := range r.legs {
		if st, ok := l.(leg.Starter); ok {
			s, err := st.Start(ctx, spec)
			if err != nil {
				return message.Session{}, err
			}
			r.forgetRoster()
			return s, nil
		}
	}
	return message.Session{}, message.ErrNoStarter
}

// StopSession ends a session the gateway started; it is not resumed.
func (r *Router) StopSession(ctx context.Context, address string) (message.Session, error) {
	l, s, err := r.resolveCloud(ctx, address)
	if err != nil {
		return message.Session{}, err
	}
	st, ok := l.(leg.Stopper)
	if !ok {
		return message.Session{}, fmt.Errorf("%w: %s is a %s session, which the gateway did not start", message.ErrNotStarted, s.Address, l.Name())
	}
	if err := st.Stop(ctx, s); err != nil {
		return message.Session{}, &LegError{Leg: l.Name(), Op: "stop", Err: err}
	}
	r.forgetRoster()
	s.Status = "stopped"
	return s, nil
}

// forgetRoster drops the cached listing: a session just started or
// stopped must resolve at once.
func (r *Router) forgetRoster() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rosterAt = time.Time{}
}

// dispatchAgent hands a background agent its work: Claude Code's daemon runs it.
func (r *Router) dispatchAgent(ctx context.Context, spec message.StartSpec) (message.Session, error) {
	for _, l := range r.legs {
		if d, ok := l.(leg.Dispatcher); ok {
			s, err := d.Dispatch(ctx, spec.Prompt, spec.Cwd)
			if err != nil {
				return message.Session{}, err
			}
			r.forgetRoster()
			return s, nil
		}
	}
	return message.Session{}, fmt.Errorf("%w: no Claude Code background-agent daemon is reachable (serve with the claude leg)", message.ErrNoStarter)
}
