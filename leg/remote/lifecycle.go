package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

// LifecycleAPI is the REST surface of the sessions' lifecycle: POST and
// PATCH /v1/sessions and the environment list
// (docs/protocols/claude-ai-remote.md#lifecycle). NewSessionsAPI's
// adapter has it; a leg whose API lacks it creates nothing.
type LifecycleAPI interface {
	// CreateSession creates a session; first are its first events.
	CreateSession(ctx context.Context, title, environmentID string, sessionContext json.RawMessage, first ...json.RawMessage) (RemoteSession, error)
	// PatchSession sets what is not nil of a session's title and status.
	PatchSession(ctx context.Context, id string, title, status *string) (RemoteSession, error)
	Environments(ctx context.Context) ([]message.Environment, error)
}

// ErrNoLifecycle means the leg's API cannot create, retitle or archive.
var ErrNoLifecycle = errors.New("remote leg: this API has no session lifecycle")

// maxCreated bounds the sessions the leg remembers creating (and follows
// for that reason); the oldest are forgotten past it.
const maxCreated = 1024

func (l *Leg) lifecycle() (LifecycleAPI, error) {
	lc, ok := l.cfg.API.(LifecycleAPI)
	if !ok {
		return nil, ErrNoLifecycle
	}
	return lc, nil
}

// Create creates a session as n asks: the Sessions API's create body, the model
// and the repository in session_context, the first prompt as its first
// user event. The leg follows it from then on and lists it at once.
func (l *Leg) Create(ctx context.Context, n message.NewRemoteSession) (message.Session, error) {
	lc, err := l.lifecycle()
	if err != nil {
		return message.Session{}, err
	}
	sc, err := sessionContext(n)
	if err != nil {
		return message.Session{}, err
	}
	var first []json.RawMessage
	if n.Body != "" {
		ev, err := wire.UserEvent(uuid.NewString(), "", n.Body)
		if err != nil {
			return message.Session{}, err
		}
		first = append(first, ev)
	}
	rs, err := lc.CreateSession(ctx, n.Title, n.EnvironmentID, sc, first...)
	if err != nil {
		return message.Session{}, err
	}
	if !ValidSessionID(rs.ID) {
		return message.Session{}, fmt.Errorf("remote leg: the server named the new session %q, not a session id", rs.ID)
	}
	if rs.Title == "" {
		rs.Title = n.Title
	}
	l.mu.Lock()
	l.created = append(l.created, rs.ID)
	if len(l.created) > maxCreated {
		l.created = slices.Delete(l.created, 0, len(l.created)-maxCreated)
	}
	l.mu.Unlock()
	l.seen(rs)
	return l.session(rs), nil
}

// sessionContext is the create body's session_context for n: its model and its
// GitHub repository as the one source; nil when it names neither.
func sessionContext(n message.NewRemoteSession) (json.RawMessage, error) {
	type gitInfo struct {
		Type     string   `json:"type"`
		Repo     string   `json:"repo"`
		Branches []string `json:"branches,omitempty"`
	}
	type source struct {
		Type    string  `json:"type"`
		GitInfo gitInfo `json:"git_info"`
	}
	sc := struct {
		Model   string   `json:"model,omitempty"`
		Sources []source `json:"sources,omitempty"`
	}{Model: n.Model}
	if n.Repo != "" {
		src := source{Type: "git_repository", GitInfo: gitInfo{Type: "github", Repo: n.Repo}}
		if n.Branch != "" {
			src.GitInfo.Branches = []string{n.Branch}
		}
		sc.Sources = []source{src}
	}
	if sc.Model == "" && sc.Sources == nil {
		return nil, nil
	}
	return json.Marshal(sc)
}

// Retitle sets target's title.
func (l *Leg) Retitle(ctx context.Context, target message.Session, title string) (message.Session, error) {
	return l.patch(ctx, target, &title, nil)
}

// Archive sets target's status to archived; the leg stops following it
// when it follows every session.
func (l *Leg) Archive(ctx context.Context, target message.Session) (message.Session, error) {
	archived := "archived"
	return l.patch(ctx, target, nil, &archived)
}

func (l *Leg) patch(ctx context.Context, target message.Session, title, status *string) (message.Session, error) {
	lc, err := l.lifecycle()
	if err != nil {
		return message.Session{}, err
	}
	id := target.SessionID
	if id == "" {
		if id, err = targetID(message.Message{To: target.Address}); err != nil {
			return message.Session{}, err
		}
	}
	rs, err := lc.PatchSession(ctx, id, title, status)
	if err != nil {
		return message.Session{}, err
	}
	if rs.ID != id { // a server that answers with less than the session
		rs.ID = id
	}
	l.seen(rs)
	return l.session(rs), nil
}

// Environments lists the environments sessions can be created in.
func (l *Leg) Environments(ctx context.Context) ([]message.Environment, error) {
	lc, err := l.lifecycle()
	if err != nil {
		return nil, err
	}
	return lc.Environments(ctx)
}

// seen puts rs in the listing as the server just showed it, so it is
// listed (and its alias named) before the next listing, and asks Run to
// list afresh now, so a new session is followed and an archived one no
// longer.
func (l *Leg) seen(rs RemoteSession) {
	l.mu.Lock()
	if i := slices.IndexFunc(l.listed, func(x RemoteSession) bool { return x.ID == rs.ID }); i >= 0 {
		l.listed = slices.Clone(l.listed)
		l.listed[i] = rs
	} else {
		l.listed = append(slices.Clone(l.listed), rs)
	}
	l.names = aliasNames(l.listed, l.cfg.Aliases)
	l.mu.Unlock()
	select {
	case l.relist <- struct{}{}:
	default: // one is already asked for
	}
}

// createdLocked says the leg created session id; l.mu must be held.
func (l *Leg) createdLocked(id string) bool { return slices.Contains(l.created, id) }
