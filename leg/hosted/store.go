package hosted

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/message"
)

// record is what the gateway keeps of one hosted session across restarts.
type record struct {
	Name      string `json:"name"`
	Agent     string `json:"agent"`
	Cwd       string `json:"cwd"`
	Mode      string `json:"permission_mode,omitempty"`
	Model     string `json:"model,omitempty"`
	SessionID string `json:"session_id,omitempty"` // the CLI's: Claude Code is given it, Qwen Code says it
	// Resumable: the CLI has taken a turn, so it keeps a transcript that
	// --resume continues; before that a restart starts it afresh.
	Resumable bool `json:"resumable,omitempty"`
	// PGID is the process group its CLI last ran in, for what a gateway
	// killed with SIGKILL left of it (reapStale).
	PGID    int       `json:"pgid,omitempty"`
	Created time.Time `json:"created"`
	// Turns were accepted and not yet taken by the CLI (its echo of the
	// user message): after a restart they are written again, in order.
	Turns []turn `json:"turns,omitempty"`
}

// turn is one user turn on its way to the CLI.
type turn struct {
	UUID  string `json:"uuid"`   // the user message's uuid, echoed back by the CLI
	MsgID string `json:"msg_id"` // the router's message id, for its receipts
	Text  string `json:"text"`
	// From is the session that sent it, which the turn's answer goes back
	// to; nil for a send from the CLI, the API or the console.
	From *sender `json:"from,omitempty"`
}

// sender is who a turn's answer goes back to.
type sender struct {
	Address   string       `json:"address"`
	Name      string       `json:"name,omitempty"`
	SessionID string       `json:"session_id,omitempty"`
	HopChain  []string     `json:"hop_chain,omitempty"`
	Mode      message.Mode `json:"mode,omitempty"`
}

// store is <state-dir>/hosted.json: every hosted session's record.
type store struct {
	path string
	recs []*record
}

const maxStoreFile = 64 << 20 // MaxHosted records with their queued turns, with room

func openStore(path string) (*store, error) {
	s := &store{path: path}
	b, err := safefile.ReadCapped(path, maxStoreFile)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &s.recs); err != nil {
		return nil, fmt.Errorf("%s: %w (move it away to start with no hosted sessions)", path, err)
	}
	// Only records of a session the leg could have made: a known agent, a
	// valid name, once each.
	seen := map[string]bool{}
	s.recs = slices.DeleteFunc(s.recs, func(r *record) bool {
		if r == nil {
			return true
		}
		_, ok := agents[r.Agent]
		drop := !ok || !validName.MatchString(r.Name) || r.Cwd == "" || seen[r.Name]
		seen[r.Name] = true
		return drop
	})
	return s, nil
}

// save writes every record; the caller holds the leg's lock.
func (s *store) save() error {
	if s.path == "" {
		return nil
	}
	b, err := json.Marshal(s.recs)
	if err != nil {
		return err
	}
	return safefile.WriteAtomic(s.path, b)
}

func (s *store) remove(r *record) {
	s.recs = slices.DeleteFunc(s.recs, func(x *record) bool { return x == r })
}
