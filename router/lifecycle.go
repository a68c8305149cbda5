package router

import (
	"context"
	"errors"
	"fmt"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// lifecycler is the first leg that creates sessions, and its name.
func (r *Router) lifecycler() (leg.Lifecycler, message.Protocol, error) {
	for _, l := range r.legs {
		if lc, ok := l.(leg.Lifecycler); ok {
			return lc, l.Name(), nil
		}
	}
	return nil, "", message.ErrNoLifecycle
}

// CreateSession creates a remote session and returns it as its leg lists it.
func (r *Router) CreateSession(ctx context.Context, n message.NewRemoteSession) (message.Session, error) {
	if err := n.Check(); err != nil {
		return message.Session{}, &InvalidSessionError{Detail: err.Error()}
	}
	lc, name, err := r.lifecycler()
	if err != nil {
		return message.Session{}, err
	}
	s, err := lc.Create(ctx, n)
	if err != nil {
		return message.Session{}, &LegError{Leg: name, Op: "create", Err: err}
	}
	return s, nil
}

// Environments lists the environments remote sessions can be created in.
func (r *Router) Environments(ctx context.Context) ([]message.Environment, error) {
	lc, name, err := r.lifecycler()
	if err != nil {
		return nil, err
	}
	envs, err := lc.Environments(ctx)
	if err != nil {
		return nil, &LegError{Leg: name, Op: "environments", Err: err}
	}
	return envs, nil
}

// Retitle gives the session address resolves to a new title.
func (r *Router) Retitle(ctx context.Context, address, title string) (message.Session, error) {
	return r.lifecycle(ctx, address, "title", func(lc leg.Lifecycler, s message.Session) (message.Session, error) {
		return lc.Retitle(ctx, s, title)
	})
}

// Archive archives the session address resolves to.
func (r *Router) Archive(ctx context.Context, address string) (message.Session, error) {
	return r.lifecycle(ctx, address, "archive", func(lc leg.Lifecycler, s message.Session) (message.Session, error) {
		return lc.Archive(ctx, s)
	})
}

func (r *Router) lifecycle(ctx context.Context, address, op string, do func(leg.Lifecycler, message.Session) (message.Session, error)) (message.Session, error) {
	l, target, err := r.resolveCloud(ctx, address)
	if err != nil {
		return message.Session{}, err
	}
	lc, ok := l.(leg.Lifecycler)
	if !ok {
		return message.Session{}, fmt.Errorf("%w: %s is a %s session", ErrNotLifecycled, target.Address, l.Name())
	}
	s, err := do(lc, target)
	if err != nil {
		return message.Session{}, &LegError{Leg: l.Name(), Op: op, Err: err}
	}
	return s, nil
}

// ErrNotLifecycled means the session's leg cannot retitle or archive it.
var ErrNotLifecycled = errors.New("only a remote session can be retitled or archived")

// InvalidSessionError is a session that cannot be created as asked.
type InvalidSessionError struct{ Detail string }

func (e *InvalidSessionError) Error() string { return "invalid new session: " + e.Detail }
