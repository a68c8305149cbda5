package outbox

import (
	"context"
	"fmt"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// The router finds a leg's optional abilities (router/leg.go) by type
// assertion, so the wrapper offers exactly those the remote leg has (a
// test checks) and hands each to the inner leg. It is no AliasHost: the
// bridge sends to a leg without aliases with Send, the sender in From.

// Abilities are the inner leg's: the wrapper changes when a message goes
// out, not what the leg's sessions are.
func (l *Leg) Abilities() leg.Abilities { return leg.AbilitiesOf(l.inner) }

// Claims is the inner leg's answer; false when it claims nothing.
func (l *Leg) Claims(a addressing.Address) bool {
	c, ok := l.inner.(leg.Claimer)
	return ok && c.Claims(a)
}

// Answer hands a permission answer to the inner leg: answers go out at
// once, never through the outbox (a late answer is a wrong answer).
func (l *Leg) Answer(ctx context.Context, req message.PermissionRequest, a message.PermissionAnswer) error {
	p, ok := l.inner.(leg.Prompter)
	if !ok {
		return message.ErrNotPrompter
	}
	return p.Answer(ctx, req, a)
}

// Control hands a control request to the inner leg, at once.
func (l *Leg) Control(ctx context.Context, target message.Session, c message.Control) (message.ControlResult, error) {
	ct, ok := l.inner.(leg.Controllable)
	if !ok {
		return message.ControlResult{}, fmt.Errorf("%w: %s is a %s session", message.ErrNotControllable, target.Address, l.inner.Name())
	}
	return ct.Control(ctx, target, c)
}

// Info is the inner leg's (the remote leg: what a session told about
// itself).
func (l *Leg) Info(ctx context.Context, target message.Session) (message.SessionInfo, error) {
	d, ok := l.inner.(leg.Describer)
	if !ok {
		return message.SessionInfo{}, fmt.Errorf("%w: %s is a %s session", message.ErrNotControllable, target.Address, l.inner.Name())
	}
	return d.Info(ctx, target)
}

// Wake is the inner leg's (the remote leg: leave dormancy for a session).
func (l *Leg) Wake(id string) {
	if w, ok := l.inner.(leg.Waker); ok {
		w.Wake(id)
	}
}

// CarriesFiles: the inner leg (the remote leg) reads each file when the
// message goes out, from the path it was accepted with.
func (l *Leg) CarriesFiles() {}

// The lifecycle (create, retitle, archive, environments) is the inner
// leg's, at once: none of it is a message to keep.
func (l *Leg) lifecycler() (leg.Lifecycler, error) {
	lc, ok := l.inner.(leg.Lifecycler)
	if !ok {
		return nil, fmt.Errorf("%w: the %s leg", message.ErrNoLifecycle, l.inner.Name())
	}
	return lc, nil
}

// Create is the inner leg's.
func (l *Leg) Create(ctx context.Context, n message.NewRemoteSession) (message.Session, error) {
	lc, err := l.lifecycler()
	if err != nil {
		return message.Session{}, err
	}
	return lc.Create(ctx, n)
}

// Retitle is the inner leg's.
func (l *Leg) Retitle(ctx context.Context, target message.Session, title string) (message.Session, error) {
	lc, err := l.lifecycler()
	if err != nil {
		return message.Session{}, err
	}
	return lc.Retitle(ctx, target, title)
}

// Archive is the inner leg's.
func (l *Leg) Archive(ctx context.Context, target message.Session) (message.Session, error) {
	lc, err := l.lifecycler()
	if err != nil {
		return message.Session{}, err
	}
	return lc.Archive(ctx, target)
}

// Environments is the inner leg's.
func (l *Leg) Environments(ctx context.Context) ([]message.Environment, error) {
	lc, err := l.lifecycler()
	if err != nil {
		return nil, err
	}
	return lc.Environments(ctx)
}

// Ready is not ready when the store cannot take a message (its last write
// failed, or it is full); else the inner leg's readiness.
func (l *Leg) Ready() error {
	if err := l.store.Err(); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	if r, ok := l.inner.(leg.Readier); ok {
		return r.Ready()
	}
	return nil
}
