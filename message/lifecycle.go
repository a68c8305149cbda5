package message

import (
	"errors"
	"strings"
)

// NewRemoteSession is what creating a remote session takes: the Sessions
// API's POST /v1/sessions (docs/protocols/claude-ai-remote.md#lifecycle), with one GitHub repository as its source and Body as
// its first prompt. Every field may be empty.
type NewRemoteSession struct {
	Title         string `json:"title,omitempty"`
	EnvironmentID string `json:"environment_id,omitempty"`
	Model         string `json:"model,omitempty"`
	Repo          string `json:"repo,omitempty"`   // OWNER/REPO on GitHub
	Branch        string `json:"branch,omitempty"` // with Repo
	Body          string `json:"body,omitempty"`
}

// Check refuses a repository that is not OWNER/REPO and a branch without
// a repository.
func (n NewRemoteSession) Check() error {
	if n.Branch != "" && n.Repo == "" {
		return errors.New("a branch needs a repository (--repo OWNER/REPO)")
	}
	if n.Repo == "" {
		return nil
	}
	owner, name, ok := strings.Cut(n.Repo, "/")
	if !ok || !repoPart(owner) || !repoPart(name) {
		return errors.New("the repository is OWNER/REPO (letters, digits, '-', '_', '.')")
	}
	return nil
}

func repoPart(s string) bool {
	if s == "" || len(s) > 100 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// Environment is one environment remote sessions run in (the Sessions API's
// environment list, docs/protocols/claude-ai-remote.md#rest-sessions-api): a bridge environment is a machine running Claude
// Code's remote control.
type Environment struct {
	ID          string `json:"environment_id"`
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	State       string `json:"state"`
	Online      bool   `json:"online"`
	Machine     string `json:"machine_name,omitempty"`
	Directory   string `json:"directory,omitempty"`
	Branch      string `json:"branch,omitempty"`
	MaxSessions int    `json:"max_sessions,omitempty"`
}
