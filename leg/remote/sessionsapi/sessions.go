package sessionsapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/sessiongateway/gateway/internal/jsonx"
)

// Session statuses (docs/protocols/claude-ai-remote.md#rest-sessions-api).
const (
	StatusActive   = "active"
	StatusArchived = "archived"
	StatusIdle     = "idle"
)

// Session is a session as the REST endpoints show it. No published
// description gives a session object: the field names follow the fake (demo/fakecloud) and
// Raw keeps everything as sent.
type Session struct {
	ID             string          `json:"id"`
	Title          string          `json:"title"`
	Status         string          `json:"session_status"` // "status" is read too
	EnvironmentID  string          `json:"environment_id,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	SessionContext json.RawMessage `json:"session_context,omitempty"`
	// Raw is the object as the server sent it, for fields not named here.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON reads a session leniently: a time it cannot parse is left
// zero (and kept in Raw) rather than failing a whole list.
func (s *Session) UnmarshalJSON(b []byte) error {
	var w struct {
		ID             string          `json:"id"`
		Title          string          `json:"title"`
		SessionStatus  string          `json:"session_status"`
		Status         string          `json:"status"`
		EnvironmentID  string          `json:"environment_id"`
		CreatedAt      string          `json:"created_at"`
		UpdatedAt      string          `json:"updated_at"`
		SessionContext json.RawMessage `json:"session_context"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = Session{ID: w.ID, Title: w.Title, Status: w.SessionStatus, EnvironmentID: w.EnvironmentID,
		CreatedAt: lenientTime(w.CreatedAt), UpdatedAt: lenientTime(w.UpdatedAt),
		SessionContext: w.SessionContext, Raw: append(json.RawMessage(nil), b...)}
	if s.Status == "" {
		s.Status = w.Status
	}
	if isNull(s.SessionContext) {
		s.SessionContext = nil
	}
	return nil
}

func lenientTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// Environment is one environment sessions run in
// (docs/protocols/claude-ai-remote.md#rest-sessions-api).
type Environment struct {
	Kind          string          `json:"kind"`
	EnvironmentID string          `json:"environment_id"`
	Name          string          `json:"name"`
	CreatedAt     time.Time       `json:"created_at"`
	State         string          `json:"state"`
	Config        json.RawMessage `json:"config,omitempty"`
	BridgeInfo    *BridgeInfo     `json:"bridge_info,omitempty"`
	Raw           json.RawMessage `json:"-"`
}

// UnmarshalJSON reads an environment as leniently as a Session.
func (e *Environment) UnmarshalJSON(b []byte) error {
	var w struct {
		Kind          string          `json:"kind"`
		EnvironmentID string          `json:"environment_id"`
		Name          string          `json:"name"`
		CreatedAt     string          `json:"created_at"`
		State         string          `json:"state"`
		Config        json.RawMessage `json:"config"`
		BridgeInfo    *BridgeInfo     `json:"bridge_info"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Environment{Kind: w.Kind, EnvironmentID: w.EnvironmentID, Name: w.Name, CreatedAt: lenientTime(w.CreatedAt),
		State: w.State, Config: w.Config, BridgeInfo: w.BridgeInfo, Raw: append(json.RawMessage(nil), b...)}
	if isNull(e.Config) {
		e.Config = nil
	}
	return nil
}

// BridgeInfo describes the machine behind a bridge environment.
type BridgeInfo struct {
	MaxSessions int     `json:"max_sessions"`
	MachineName string  `json:"machine_name"`
	Directory   string  `json:"directory"`
	Branch      string  `json:"branch"`
	GitRepoURL  *string `json:"git_repo_url"`
	Online      bool    `json:"online"`
	SpawnMode   *string `json:"spawn_mode"`
}

// CreateSessionRequest is the body of POST /v1/sessions.
type CreateSessionRequest struct {
	Title         string
	EnvironmentID string
	// Events are the session's first events, each a JSON object; they are
	// given uuids and signed like PostEvents' and sent wrapped,
	// {"type":"event","data":EVENT}.
	Events []json.RawMessage
	// SessionContext is sent as is: {"model", "sources", "outcomes",
	// "mcp_config", "mcp_tools", "custom_system_prompt"} as the web app sends it.
	SessionContext json.RawMessage
}

// SessionPatch is the body of PATCH /v1/sessions/{id}; nil fields are left
// as they are.
type SessionPatch struct {
	Title  *string `json:"title,omitempty"`
	Status *string `json:"status,omitempty"`
}

// page is the list shape of every list endpoint; environments come under
// "environments" instead of "data".
type page[T any] struct {
	Data         []T    `json:"data"`
	Environments []T    `json:"environments"`
	HasMore      bool   `json:"has_more"`
	FirstID      string `json:"first_id"`
	LastID       string `json:"last_id"`
}

// A paged list is bounded, against a server whose has_more never ends:
// in pages, in items and in the bytes of the pages read (each item keeps
// a raw copy of itself, so the bytes are about what the list holds).
// MaxListItems is well above the 10,000 sessions the gateway is measured
// following; past any bound the list fails with ErrBadResponse.
const (
	maxPages     = 1000
	MaxListItems = 20000
	MaxListBytes = 64 << 20
)

// maxListBytes is MaxListBytes; tests lower it.
var maxListBytes = MaxListBytes

// list follows has_more / after_id paging until the last page.
func list[T any](ctx context.Context, c *Client, r request, id func(T) string) ([]T, error) {
	var out []T
	after := ""
	size := 0
	for range maxPages {
		q := url.Values{}
		for k, v := range r.query {
			q[k] = v
		}
		if after != "" {
			q.Set("after_id", after)
		}
		r.query = q
		b, err := c.do(ctx, r)
		if err != nil {
			return nil, err
		}
		if size += len(b); size > maxListBytes {
			return nil, fmt.Errorf("sessionsapi: %s: %w: more than %d bytes", r.op, ErrBadResponse, maxListBytes)
		}
		var p page[T]
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("sessionsapi: %s: %w: %v", r.op, ErrBadResponse, err)
		}
		items := p.Data
		if items == nil {
			items = p.Environments
		}
		if len(out)+len(items) > MaxListItems {
			return nil, fmt.Errorf("sessionsapi: %s: %w: more than %d items", r.op, ErrBadResponse, MaxListItems)
		}
		out = append(out, items...)
		if !p.HasMore {
			return out, nil
		}
		next := p.LastID
		if next == "" && len(items) > 0 {
			next = id(items[len(items)-1])
		}
		if next == "" || next == after {
			return nil, fmt.Errorf("sessionsapi: %s: %w: has_more without a new last_id", r.op, ErrBadResponse)
		}
		after = next
	}
	return nil, fmt.Errorf("sessionsapi: %s: %w: more than %d pages", r.op, ErrBadResponse, maxPages)
}

func sessionID(s Session) string { return s.ID }
func envID(e Environment) string { return e.EnvironmentID }
func pathID(op, id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("sessionsapi: %s: %w", op, ErrNoID)
	}
	return url.PathEscape(id), nil
}

// ListSessions lists every session (GET /v1/sessions), following pages.
func (c *Client) ListSessions(ctx context.Context) ([]Session, error) {
	return list(ctx, c, request{op: "ListSessions", method: http.MethodGet, path: "/v1/sessions",
		route: "/v1/sessions", retry: retryTransient}, sessionID)
}

// CreateSession creates a session (POST /v1/sessions). It is not
// idempotent, so it is retried only when the server cannot have acted: a
// 429, a refused connection, or a 401 followed by a token refresh.
func (c *Client) CreateSession(ctx context.Context, req CreateSessionRequest) (Session, error) {
	const op = "CreateSession"
	events, err := c.prepare(ctx, op, req.Events)
	if err != nil {
		return Session{}, err
	}
	type wrapped struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	body := struct {
		Title          string          `json:"title,omitempty"`
		EnvironmentID  string          `json:"environment_id,omitempty"`
		Events         []wrapped       `json:"events,omitempty"`
		SessionContext json.RawMessage `json:"session_context,omitempty"`
	}{Title: req.Title, EnvironmentID: req.EnvironmentID, SessionContext: req.SessionContext}
	for _, e := range events {
		body.Events = append(body.Events, wrapped{Type: "event", Data: e})
	}
	b, err := jsonx.Marshal(body)
	if err != nil {
		return Session{}, fmt.Errorf("sessionsapi: %s: %w", op, err)
	}
	var s Session
	err = c.call(ctx, request{op: op, method: http.MethodPost, path: "/v1/sessions", route: "/v1/sessions",
		body: b, retry: retryUnsent}, &s)
	return s, err
}

// GetSession fetches one session (GET /v1/sessions/{id}).
func (c *Client) GetSession(ctx context.Context, id string) (Session, error) {
	return c.getSession(ctx, "GetSession", "/v1/sessions/", id)
}

func (c *Client) getSession(ctx context.Context, op, prefix, id string) (Session, error) {
	p, err := pathID(op, id)
	if err != nil {
		return Session{}, err
	}
	var s Session
	err = c.call(ctx, request{op: op, method: http.MethodGet, path: prefix + p, route: prefix + "{id}", retry: retryTransient}, &s)
	return s, err
}

// PatchSession changes a session's title or status (PATCH /v1/sessions/{id}).
func (c *Client) PatchSession(ctx context.Context, id string, patch SessionPatch) (Session, error) {
	const op = "PatchSession"
	p, err := pathID(op, id)
	if err != nil {
		return Session{}, err
	}
	b, err := jsonx.Marshal(patch)
	if err != nil {
		return Session{}, fmt.Errorf("sessionsapi: %s: %w", op, err)
	}
	var s Session
	err = c.call(ctx, request{op: op, method: http.MethodPatch, path: "/v1/sessions/" + p, route: "/v1/sessions/{id}",
		body: b, retry: retryTransient}, &s)
	return s, err
}

// ShareStatus returns a session's share status as sent (GET
// /v1/sessions/{id}/share-status); its shape is not known.
func (c *Client) ShareStatus(ctx context.Context, id string) (json.RawMessage, error) {
	const op = "ShareStatus"
	p, err := pathID(op, id)
	if err != nil {
		return nil, err
	}
	b, err := c.do(ctx, request{op: op, method: http.MethodGet, path: "/v1/sessions/" + p + "/share-status",
		route: "/v1/sessions/{id}/share-status", retry: retryTransient})
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return nil, fmt.Errorf("sessionsapi: %s: %w: not JSON", op, ErrBadResponse)
	}
	return json.RawMessage(b), nil
}

func (c *Client) envPath(op string) (string, error) {
	if c.org == "" {
		return "", fmt.Errorf("sessionsapi: %s: %w: the environment paths need an organisation uuid", op, ErrConfig)
	}
	return "/v1/environment_providers/private/organizations/" + url.PathEscape(c.org) + "/environments", nil
}

// ListEnvironments lists the organisation's environments, following pages.
func (c *Client) ListEnvironments(ctx context.Context) ([]Environment, error) {
	const op = "ListEnvironments"
	p, err := c.envPath(op)
	if err != nil {
		return nil, err
	}
	return list(ctx, c, request{op: op, method: http.MethodGet, path: p,
		route: "/v1/environment_providers/private/organizations/{org}/environments", retry: retryTransient}, envID)
}

// GetEnvironment fetches one environment.
func (c *Client) GetEnvironment(ctx context.Context, envID string) (Environment, error) {
	const op = "GetEnvironment"
	p, err := c.envPath(op)
	if err != nil {
		return Environment{}, err
	}
	id, err := pathID(op, envID)
	if err != nil {
		return Environment{}, err
	}
	var e Environment
	err = c.call(ctx, request{op: op, method: http.MethodGet, path: p + "/" + id,
		route: "/v1/environment_providers/private/organizations/{org}/environments/{env}", retry: retryTransient}, &e)
	return e, err
}

// ListCodeSessions lists the v2 code sessions (GET /v1/code/sessions).
func (c *Client) ListCodeSessions(ctx context.Context) ([]Session, error) {
	return list(ctx, c, request{op: "ListCodeSessions", method: http.MethodGet, path: "/v1/code/sessions",
		route: "/v1/code/sessions", retry: retryTransient}, sessionID)
}

// GetCodeSession fetches one v2 code session (GET /v1/code/sessions/{id}).
func (c *Client) GetCodeSession(ctx context.Context, id string) (Session, error) {
	return c.getSession(ctx, "GetCodeSession", "/v1/code/sessions/", id)
}
