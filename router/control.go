package router

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// Control sends c to the session address resolves to, through its leg, and
// reports the session's answer. Nothing is sent when c is invalid: a mode
// the protocol does not have, or a model the session did not offer. A
// session's error answer is a *RefusedError.
func (r *Router) Control(ctx context.Context, address string, c message.Control) (message.ControlResult, error) {
	if err := validateControl(c); err != nil {
		return message.ControlResult{}, err
	}
	l, target, err := r.resolveCloud(ctx, address)
	if err != nil {
		return message.ControlResult{}, err
	}
	ct, ok := l.(leg.Controllable)
	if !ok {
		return message.ControlResult{}, fmt.Errorf("%w: %s is a %s session", message.ErrNotControllable, target.Address, l.Name())
	}
	if d, ok := l.(leg.Describer); ok {
		info, err := d.Info(ctx, target)
		var nf *addressing.NotFoundError
		if errors.As(err, &nf) {
			return message.ControlResult{}, err
		}
		if err == nil && c.Kind == message.ControlSetModel {
			if err := info.CheckModel(c.Model); err != nil {
				return message.ControlResult{}, &InvalidControlError{Detail: err.Error()}
			}
		}
	}
	res, err := ct.Control(ctx, target, c)
	var refused *message.ControlRefusedError
	switch {
	case errors.As(err, &refused):
		return res, &RefusedError{Leg: l.Name(), Err: err}
	case err != nil:
		return res, &LegError{Leg: l.Name(), Op: "control", Err: err}
	}
	return res, nil
}

// SessionInfo is what the session address resolves to told about itself,
// through its leg.
func (r *Router) SessionInfo(ctx context.Context, address string) (message.SessionInfo, error) {
	l, target, err := r.resolveCloud(ctx, address)
	if err != nil {
		return message.SessionInfo{}, err
	}
	d, ok := l.(leg.Describer)
	if !ok {
		return message.SessionInfo{}, fmt.Errorf("%w: %s is a %s session", message.ErrNotControllable, target.Address, l.Name())
	}
	return d.Info(ctx, target)
}

func validateControl(c message.Control) error {
	switch c.Kind {
	case message.ControlInterrupt:
		if c.Mode != "" || c.Model != "" {
			return &InvalidControlError{Detail: "interrupt takes no mode or model"}
		}
	case message.ControlSetPermissionMode:
		if c.Model != "" || !message.ValidPermissionMode(c.Mode) {
			return &InvalidControlError{Detail: fmt.Sprintf("set_permission_mode takes a mode (%s) and no model; %q is not one",
				strings.Join(message.PermissionModes, ", "), c.Mode)}
		}
	case message.ControlSetModel:
		if c.Mode != "" {
			return &InvalidControlError{Detail: "set_model takes a model (empty for the default), not a mode"}
		}
	default:
		return &InvalidControlError{Detail: fmt.Sprintf("kind %q: want interrupt, set_permission_mode or set_model", c.Kind)}
	}
	return nil
}
