// Package away keeps whether the user said they are away from their
// terminals (`gateway away on`): local sessions' permission prompts then wait
// for an answer from elsewhere instead of going back to the terminal after
// a short while. The state survives a restart in a small file of the state
// directory.
package away

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/safefile"
)

// State is the away switch. Its zero value is "here", kept in memory only.
type State struct {
	path string // empty: not kept

	mu      sync.Mutex
	on      bool
	since   time.Time
	changed chan struct{} // closed at the next change
}

// Status is the switch as the API shows it.
type Status struct {
	Away  bool      `json:"away"`
	Since time.Time `json:"since,omitzero"` // when it was last switched
}

// maxFile bounds what is read back: the file holds one small object.
const maxFile = 4 << 10

// Open reads the switch kept at path; a missing file is "here". A file
// that cannot be read is an error: the user said something we cannot tell.
func Open(path string) (*State, error) {
	s := &State{path: path}
	b, err := safefile.ReadCapped(path, maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("away: %w", err)
	}
	var st Status
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("away: %s: %w", path, err)
	}
	s.on, s.since = st.Away, st.Since
	return s, nil
}

// Away reports whether the user is away.
func (s *State) Away() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.on
}

// Status is the switch and when it was set.
func (s *State) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{Away: s.on, Since: s.since}
}

// Changed returns a channel closed at the next change of the switch.
func (s *State) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// Set switches away on or off at now and keeps it; switching to what it
// already is changes nothing. The file is written before the switch moves,
// so a switch that could not be kept is not half made.
func (s *State) Set(on bool, now time.Time) (Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on == s.on && !s.since.IsZero() {
		return Status{Away: s.on, Since: s.since}, nil
	}
	st := Status{Away: on, Since: now.UTC()}
	if s.path != "" {
		b, _ := json.Marshal(st)
		if err := safefile.WriteAtomic(s.path, b); err != nil {
			return Status{Away: s.on, Since: s.since}, fmt.Errorf("away: %w", err)
		}
	}
	s.on, s.since = on, st.Since
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return st, nil
}
