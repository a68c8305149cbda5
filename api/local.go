package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/sessiongateway/gateway/message"
)

// startLocal starts a hosted session: the real CLI run headless by the
// gateway, as its own user, in the directory given.
func (s *Server) startLocal(w http.ResponseWriter, r *http.Request) {
	var b message.StartSpec
	if err := decode(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	switch {
	case b.Agent == "":
		s.fail(w, errBadRequest(`"agent" is required: claude, qwen or claude-bg`))
		return
	case b.Cwd == "":
		s.fail(w, errBadRequest(`"cwd" is required: the directory the session works in`))
		return
	}
	ss, err := s.cfg.Router.StartSession(r.Context(), b)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, ss)
}

// stopLocal ends a hosted session for good.
func (s *Server) stopLocal(w http.ResponseWriter, r *http.Request) {
	ss, err := s.cfg.Router.StopSession(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ss)
}

// StartSession starts a hosted session (POST /v1/local/sessions).
func (c *Client) StartSession(ctx context.Context, spec message.StartSpec) (message.Session, error) {
	var s message.Session
	return s, c.do(ctx, "POST", "/v1/local/sessions", spec, &s)
}

// StopSession ends the hosted session name (DELETE /v1/local/sessions/{name}).
func (c *Client) StopSession(ctx context.Context, name string) (message.Session, error) {
	var s message.Session
	return s, c.do(ctx, "DELETE", "/v1/local/sessions/"+url.PathEscape(name), nil, &s)
}
