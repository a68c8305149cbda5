package remote

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/sessiongateway/gateway/transport/remote/stream"
	"github.com/sessiongateway/gateway/transport/sessionsapi"
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
		out[i] = RemoteSession{ID: s.ID, Title: s.Title, Status: s.Status, Created: s.CreatedAt}
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

// refusals are the Sessions API's answers that retrying the same request
// will not change.
var refusals = []error{
	sessionsapi.ErrBadRequest, sessionsapi.ErrUnauthorized, sessionsapi.ErrForbidden,
	sessionsapi.ErrNotFound, sessionsapi.ErrInvalidEvent, sessionsapi.ErrNoID,
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
