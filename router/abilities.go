package router

import (
	"context"
	"errors"
	"fmt"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// What the legs' optional abilities (leg/leg.go) offer the router's callers:
// the API reaches held messages, idle notices, readiness and the durable
// outbox here, never by asking a leg what it is.

var (
	// ErrNotHeld is returned when no leg holds the id.
	ErrNotHeld = errors.New("no held message with that id")
	// ErrNoIdleNotices means the session's leg cannot tell when it goes idle.
	ErrNoIdleNotices = errors.New("no idle notices")
)

// RefusedError is a leg's refusal of a request it took up: a held message
// decided meanwhile, an idle subscription its peer turned down. The text is
// the leg's own.
type RefusedError struct {
	Leg message.Protocol
	Err error
}

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Held lists the messages every holding leg holds for a person to decide,
// leg by leg.
func (r *Router) Held() []message.Held {
	var all []message.Held
	for _, l := range r.legs {
		if h, ok := l.(leg.Holder); ok {
			all = append(all, h.Held()...)
		}
	}
	return all
}

// Decide releases (delivers) or denies the held message id on the leg that
// holds it: ErrNotHeld when none does, a *RefusedError when that leg
// refuses (decided meanwhile, its queue full).
func (r *Router) Decide(ctx context.Context, id string, release bool, reason string) error {
	for _, l := range r.legs {
		h, ok := l.(leg.Holder)
		if !ok {
			continue
		}
		for _, m := range h.Held() {
			if m.Message.ID == id {
				if err := h.Decide(ctx, id, release, reason); err != nil {
					return &RefusedError{Leg: l.Name(), Err: err}
				}
				return nil
			}
		}
	}
	return fmt.Errorf("%w: %s", ErrNotHeld, id)
}

// NotifyWhenIdle asks the leg of the session `to` resolves to for an idle
// notice (an EventIdle carrying the returned subscription id) when that
// session goes idle. A leg without idle notices is ErrNoIdleNotices; its
// peer's refusal a *RefusedError.
func (r *Router) NotifyWhenIdle(ctx context.Context, to string) (string, message.Session, error) {
	l, target, err := r.Resolve(ctx, to)
	if err != nil {
		return "", message.Session{}, err
	}
	is, ok := l.(leg.IdleSubscriber)
	if !ok {
		return "", target, fmt.Errorf("the %s leg has %w", l.Name(), ErrNoIdleNotices)
	}
	id, err := is.NotifyWhenIdle(ctx, target)
	if err != nil {
		return "", target, &RefusedError{Leg: l.Name(), Err: err}
	}
	return id, target, nil
}

// Ready says, for every leg by name, nil when it is ready or why it is
// not. A leg that cannot tell counts as ready.
func (r *Router) Ready() map[message.Protocol]error {
	legs := make(map[message.Protocol]error, len(r.legs))
	for _, l := range r.legs {
		var err error
		if rd, ok := l.(leg.Readier); ok {
			err = rd.Ready()
		}
		legs[l.Name()] = err
	}
	return legs
}

// OutboxDepth counts what the legs with a durable outbox hold for a
// server's acknowledgement; ok is false when no leg has one.
func (r *Router) OutboxDepth() (n int, ok bool) {
	for _, l := range r.legs {
		if o, is := l.(leg.Outboxer); is {
			n, ok = n+o.Depth(), true
		}
	}
	return n, ok
}

// Outbox lists, leg by leg, what the legs with a durable outbox hold for a
// server's acknowledgement; all adds the recently acknowledged and failed
// ones.
func (r *Router) Outbox(all bool) ([]message.OutboxItem, error) {
	var items []message.OutboxItem
	for _, l := range r.legs {
		o, ok := l.(leg.Outboxer)
		if !ok {
			continue
		}
		its, err := o.Outbox(all)
		if err != nil {
			return nil, fmt.Errorf("reading the %s leg's outbox: %w", l.Name(), err)
		}
		items = append(items, its...)
	}
	return items, nil
}
