package remote

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/message"
)

// NewSessionsAPI adapts the Sessions API client to what the leg needs, on
// the paths that match the live transport: v1 (/v1/sessions) with the
// subscribe WebSocket, v2 (/v1/code/sessions) with the SSE stream.
func NewSessionsAPI(c *sessionsapi.Client, t stream.Transport) API {
	return sessionsAPI{c: c, v2: t == stream.TransportSSE}
}

type sessionsAPI struct {
	c  *sessionsapi.Client
	v2 bool
}

func (a sessionsAPI) EventsAfter(ctx context.Context, id, after string) ([]json.RawMessage, bool, error) {
	return a.c.EventsAfter(ctx, id, after)
}

func (a sessionsAPI) CodeEventsAfter(ctx context.Context, id string, after uint64) ([]json.RawMessage, bool, error) {
	return a.c.CodeEventsAfter(ctx, id, after)
}

func (a sessionsAPI) StreamHeader(ctx context.Context) (http.Header, error) {
	return a.c.StreamHeader(ctx)
}

func (a sessionsAPI) ListSessions(ctx context.Context) ([]RemoteSession, error) {
	list := a.c.ListSessions
	if a.v2 {
		list = a.c.ListCodeSessions
	}
	ss, err := list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]RemoteSession, len(ss))
	for i, s := range ss {
		out[i] = remoteSession(s)
	}
	return out, nil
}

func (a sessionsAPI) Post(ctx context.Context, id string, events ...json.RawMessage) error {
	post := a.c.PostEvents
	if a.v2 {
		post = a.c.PostCodeEvents
	}
	_, err := post(ctx, id, events...)
	return err
}

// CreateSession creates a session on the v1 path, whichever the
// live transport: the v2 paths' create is not documented.
func (a sessionsAPI) CreateSession(ctx context.Context, title, envID string, sc json.RawMessage, first ...json.RawMessage) (RemoteSession, error) {
	s, err := a.c.CreateSession(ctx, sessionsapi.CreateSessionRequest{Title: title, EnvironmentID: envID, Events: first, SessionContext: sc})
	return remoteSession(s), err
}

// PatchSession is PATCH /v1/sessions/{id} (title, status).
func (a sessionsAPI) PatchSession(ctx context.Context, id string, title, status *string) (RemoteSession, error) {
	s, err := a.c.PatchSession(ctx, id, sessionsapi.SessionPatch{Title: title, Status: status})
	return remoteSession(s), err
}

func (a sessionsAPI) Environments(ctx context.Context) ([]message.Environment, error) {
	envs, err := a.c.ListEnvironments(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]message.Environment, len(envs))
	for i, e := range envs {
		out[i] = message.Environment{ID: e.EnvironmentID, Name: e.Name, Kind: e.Kind, State: e.State}
		if b := e.BridgeInfo; b != nil {
			out[i].Online, out[i].Machine, out[i].Directory, out[i].Branch, out[i].MaxSessions = b.Online, b.MachineName, b.Directory, b.Branch, b.MaxSessions
		}
	}
	return out, nil
}

func remoteSession(s sessionsapi.Session) RemoteSession {
	return RemoteSession{ID: s.ID, Title: s.Title, Status: s.Status, Created: s.CreatedAt}
}

// refusals are the Sessions API's answers that retrying the same request
// will not change.
var refusals = []error{
	sessionsapi.ErrBadRequest, sessionsapi.ErrUnauthorized, sessionsapi.ErrForbidden,
	sessionsapi.ErrNotFound, sessionsapi.ErrInvalidEvent, sessionsapi.ErrNoID, ErrAttachment,
}

// IsRefusal says a send error of the leg refuses the message for good: a
// durable queue drops it rather than retry.
func IsRefusal(err error) bool {
	for _, r := range refusals {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}
