package hosted

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

// Answer writes a as the control_response to the CLI's can_use_tool
// request req. A prompt no longer open (answered, withdrawn, its CLI gone)
// is refused as settled.
func (l *Leg) Answer(ctx context.Context, req message.PermissionRequest, a message.PermissionAnswer) error {
	d := wire.Decision{Behavior: string(a.Behavior), ToolUseID: req.ToolUseID, Message: a.Message}
	switch a.Behavior {
	case message.BehaviorAllow:
		in, err := a.Input(req)
		if err != nil {
			return fmt.Errorf("hosted leg: %w", err)
		}
		d.UpdatedInput = in
	case message.BehaviorDeny:
		if d.Message == "" {
			d.Message = "denied through the gateway"
		}
	default:
		return fmt.Errorf("hosted leg: behavior %q is neither allow nor deny", a.Behavior)
	}
	for _, u := range a.Updates(req) {
		w := wire.PermissionUpdate{Type: u.Type, Behavior: u.Behavior, Destination: u.Destination, Mode: u.Mode, Directories: u.Directories}
		for _, r := range u.Rules {
			w.Rules = append(w.Rules, wire.Rule{ToolName: r.ToolName, RuleContent: r.RuleContent})
		}
		d.UpdatedPermissions = append(d.UpdatedPermissions, w)
	}
	line, err := wire.AnswerEvent(uuid.NewString(), req.RequestID, d)
	if err != nil {
		return err
	}
	l.mu.Lock()
	s, err := l.lookupLocked(req.Address, req.Name)
	if err != nil {
		l.mu.Unlock()
		return &message.PromptSettledError{State: message.PermissionCancelled}
	}
	_, open := s.prompts[req.RequestID]
	p := s.p
	if !open || p == nil {
		l.mu.Unlock()
		return &message.PromptSettledError{State: message.PermissionCancelled}
	}
	delete(s.prompts, req.RequestID)
	l.mu.Unlock()
	if err := p.write(line); err != nil {
		return fmt.Errorf("hosted leg: the CLI did not take the answer: %w", err)
	}
	return nil
}

// Control sends interrupt, set_permission_mode or set_model to the
// session's CLI and waits for its answer.
func (l *Leg) Control(ctx context.Context, target message.Session, c message.Control) (message.ControlResult, error) {
	req := map[string]any{"subtype": string(c.Kind)}
	switch c.Kind {
	case message.ControlInterrupt:
	case message.ControlSetPermissionMode:
		req["mode"] = c.Mode
	case message.ControlSetModel:
		if c.Model != "" {
			req["model"] = c.Model
		}
	default:
		return message.ControlResult{}, fmt.Errorf("%w: %s", message.ErrNotControllable, c.Kind)
	}
	rid := "gw-" + uuid.NewString()
	line, err := wire.ControlEvent(uuid.NewString(), rid, req)
	if err != nil {
		return message.ControlResult{}, err
	}
	l.mu.Lock()
	s, err := l.lookupLocked(target.Address, target.Name)
	if err != nil {
		l.mu.Unlock()
		return message.ControlResult{}, err
	}
	p := s.p
	if p == nil {
		l.mu.Unlock()
		return message.ControlResult{}, errNotRunning
	}
	answer := make(chan *wire.ControlResponse, 1)
	s.controls[rid] = answer
	l.mu.Unlock()
	forget := func() {
		l.mu.Lock()
		delete(s.controls, rid)
		l.mu.Unlock()
	}
	if err := p.write(line); err != nil {
		forget()
		return message.ControlResult{}, fmt.Errorf("hosted leg: the CLI did not take the request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	select {
	case cr, ok := <-answer:
		if !ok {
			return message.ControlResult{RequestID: rid}, errNotRunning
		}
		if cr.Subtype == "error" {
			return message.ControlResult{}, &message.ControlRefusedError{Kind: c.Kind, RequestID: rid, Reason: cr.Error}
		}
		if c.Kind == message.ControlSetPermissionMode || c.Kind == message.ControlSetModel {
			l.mu.Lock()
			if c.Kind == message.ControlSetPermissionMode {
				s.rec.Mode = c.Mode
			} else {
				s.rec.Model = c.Model
			}
			_ = l.store.save()
			l.mu.Unlock()
		}
		return message.ControlResult{RequestID: rid, Acknowledged: true}, nil
	case <-ctx.Done():
		forget()
		return message.ControlResult{RequestID: rid}, message.ErrNoControlAnswer
	}
}
