package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/sessiongateway/gateway/message"
)

// The remote sessions' lifecycle: create, retitle, archive, and the
// environments to create them in (the Sessions API's REST calls, through
// the remote leg: docs/protocols/claude-ai-remote.md#lifecycle).

// TitleBody is POST /v1/remote/title's request.
type TitleBody struct {
	Address string `json:"address"`
	Title   string `json:"title"`
}

// ArchiveBody is POST /v1/remote/archive's request.
type ArchiveBody struct {
	Address string `json:"address"`
}

// NewRemoteSession is POST /v1/remote/sessions's request: the session's
// fields, with the first prompt in body or, for one release, text.
type NewRemoteSession struct {
	message.NewRemoteSession
	// Text is body's old JSON spelling, read for one release.
	Text string `json:"text,omitempty"`
}

func (s *Server) createRemote(w http.ResponseWriter, r *http.Request) {
	var b NewRemoteSession
	if err := decode(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	if b.Body != "" && b.Text != "" && b.Body != b.Text {
		s.fail(w, errBadRequest(`"body" and its deprecated alias "text" differ: send "body" alone`))
		return
	}
	if b.Body == "" {
		b.Body = b.Text
	}
	ss, err := s.cfg.Router.CreateSession(r.Context(), b.NewRemoteSession)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, ss)
}

func (s *Server) retitleRemote(w http.ResponseWriter, r *http.Request) {
	var b TitleBody
	if err := decode(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	switch {
	case strings.TrimSpace(b.Address) == "":
		s.fail(w, errBadRequest(`"address" is required`))
		return
	case strings.TrimSpace(b.Title) == "":
		s.fail(w, errBadRequest(`"title" is required`))
		return
	}
	ss, err := s.cfg.Router.Retitle(r.Context(), b.Address, b.Title)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ss)
}

func (s *Server) archiveRemote(w http.ResponseWriter, r *http.Request) {
	var b ArchiveBody
	if err := decode(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	if strings.TrimSpace(b.Address) == "" {
		s.fail(w, errBadRequest(`"address" is required`))
		return
	}
	ss, err := s.cfg.Router.Archive(r.Context(), b.Address)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ss)
}

func (s *Server) environments(w http.ResponseWriter, r *http.Request) {
	envs, err := s.cfg.Router.Environments(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	if envs == nil {
		envs = []message.Environment{}
	}
	writeJSON(w, http.StatusOK, envs)
}

// CreateRemote creates a remote session and returns it.
func (c *Client) CreateRemote(ctx context.Context, n message.NewRemoteSession) (message.Session, error) {
	var s message.Session
	return s, c.do(ctx, "POST", "/v1/remote/sessions", n, &s)
}

// RetitleRemote sets the title of the remote session at address.
func (c *Client) RetitleRemote(ctx context.Context, address, title string) (message.Session, error) {
	var s message.Session
	return s, c.do(ctx, "POST", "/v1/remote/title", TitleBody{Address: address, Title: title}, &s)
}

// ArchiveRemote archives the remote session at address.
func (c *Client) ArchiveRemote(ctx context.Context, address string) (message.Session, error) {
	var s message.Session
	return s, c.do(ctx, "POST", "/v1/remote/archive", ArchiveBody{Address: address}, &s)
}

// Environments lists the environments remote sessions can be created in.
func (c *Client) Environments(ctx context.Context) ([]message.Environment, error) {
	var envs []message.Environment
	return envs, c.do(ctx, "GET", "/v1/remote/environments", nil, &envs)
}
