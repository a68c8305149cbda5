package router

import (
	"fmt"

	"github.com/sessiongateway/gateway/message"
)

// The permission broker: prompts the legs raise, kept by (session,
// request id) under a short id until answered or withdrawn
// (permissions_broker.go), answered through their leg, first answer wins
// (permissions_answer.go), each answer checked first
// (permissions_validate.go).

// LegError is a leg's failure to carry an answer or a control request to
// its session. The prompt stays pending.
type LegError struct {
	Leg message.Protocol
	Op  string // "answer" or "control"
	Err error
}

func (e *LegError) Error() string { return fmt.Sprintf("%s leg: %s: %v", e.Leg, e.Op, e.Err) }
func (e *LegError) Unwrap() error { return e.Err }

// InvalidControlError is a control request that cannot be sent.
type InvalidControlError struct{ Detail string }

func (e *InvalidControlError) Error() string { return "invalid control request: " + e.Detail }

// notePermission takes a leg's permission event, keeps the broker's entry
// current and returns the event to publish, restamped with the short id; false
// when there is nothing new to publish.
func (r *Router) notePermission(ev message.Event) (message.Event, bool) {
	p := ev.Permission
	if p == nil || p.SessionID == "" || p.RequestID == "" {
		r.log.Debug("permission event without a session or request id dropped")
		return ev, false
	}
	req := *p
	if req.Leg == "" {
		req.Leg = ev.Leg
	}
	if req.Host == "" {
		req.Host = r.cfg.Host
	}
	if req.Source == "" {
		req.Source = message.SourceRemote
	}
	if req.Created.IsZero() {
		req.Created = r.cfg.Clock.Now()
	}
	req.Classify()
	if len(req.Suggestions) > message.MaxSuggestions {
		req.Suggestions = req.Suggestions[:message.MaxSuggestions]
	}
	var (
		out message.PermissionRequest
		ok  bool
	)
	switch req.State {
	case message.PermissionPending:
		var err error
		if out, ok, err = r.perms.add(req, r.abilities[req.Leg].ReraisesCancelled); err != nil {
			r.log.Warn("permission prompt not kept", "session_id", req.SessionID, "request_id", req.RequestID, "err", err)
		}
	case message.PermissionCancelled:
		out, ok = r.perms.cancel(permKey{req.SessionID, req.RequestID}, message.PermissionCancelled, nil)
	case message.PermissionAnswered:
		// Answered elsewhere (claude.ai, another client): the leg saw the
		// answer on the session's stream. The leg leaves out the echoes of
		// answers sent through the router, which settles those itself.
		a := message.PermissionAnswer{By: "remote"}
		if req.Answer != nil {
			a = *req.Answer
			if a.By == "" {
				a.By = "remote"
			}
		}
		out, ok = r.perms.cancel(permKey{req.SessionID, req.RequestID}, message.PermissionAnswered, &a)
	default:
		r.log.Debug("permission event in an unexpected state dropped", "state", req.State)
		return ev, false
	}
	if !ok {
		return ev, false
	}
	ev.Permission = &out
	return ev, true
}

// Permissions lists the pending permission prompts, oldest first.
func (r *Router) Permissions() []message.PermissionRequest {
	r.perms.mu.Lock()
	defer r.perms.mu.Unlock()
	return sortByAge(r.perms.pending)
}

// SettledPermissions lists the most recently answered or withdrawn prompts,
// oldest first.
func (r *Router) SettledPermissions() []message.PermissionRequest {
	r.perms.mu.Lock()
	defer r.perms.mu.Unlock()
	return sortByAge(r.perms.settled)
}

// PermissionsChanged returns a channel closed at the next change of the
// prompts (a prompt raised, answered or withdrawn); see Hub.PermissionsChanged.
func (r *Router) PermissionsChanged() <-chan struct{} { return r.hub.PermissionsChanged() }

// Permission returns a pending or recently settled prompt.
func (r *Router) Permission(id string) (message.PermissionRequest, error) {
	_, req, err := r.perms.get(id)
	return req, err
}
