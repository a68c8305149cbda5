package claudecli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RegistryEntry is the file <pid>.json a session writes in its registry dir,
// with the fields Claude Code 2.1.332 was seen to write. Times are Unix
// milliseconds.
type RegistryEntry struct {
	PID                    int             `json:"pid"`
	SessionID              string          `json:"sessionId"`
	Cwd                    string          `json:"cwd"`
	StartedAt              int64           `json:"startedAt"`
	ProcStart              string          `json:"procStart"` // field 22 of /proc/<pid>/stat
	Version                string          `json:"version"`
	PeerProtocol           int             `json:"peerProtocol"`
	PeerFeatures           []string        `json:"peerFeatures"`
	Kind                   string          `json:"kind"`       // "interactive", also for -p
	Entrypoint             string          `json:"entrypoint"` // "cli" (TUI) or "sdk-cli" (-p)
	PIDDomain              string          `json:"pidDomain"`  // linux:<machine-id>:pid:[<pid ns inode>]
	AsksForConvertedSkills json.RawMessage `json:"asksForConvertedSkills"`
	MessagingSocketPath    string          `json:"messagingSocketPath"`
	Name                   string          `json:"name"`
	NameSource             string          `json:"nameSource"` // "derived" or "user" (--name)
	NameSince              int64           `json:"nameSince"`
	Status                 string          `json:"status"` // "idle" or "busy"
	UpdatedAt              int64           `json:"updatedAt"`
	StatusUpdatedAt        int64           `json:"statusUpdatedAt"`
	BridgeSessionID        string          `json:"bridgeSessionId,omitempty"` // only with Remote Control
}

// KeyFile is the file <pid>.<sha256 hex of the socket path>.key next to the
// registry entry. PeerToken is a bearer secret for the session's socket.
type KeyFile struct {
	PeerToken string `json:"peerToken"`
	ProcStart string `json:"procStart"`
	PIDDomain string `json:"pidDomain"`
}

// Entry reads the session's registry entry as it is now.
func (s *Session) Entry() (RegistryEntry, error) {
	return readEntry(s.EntryPath())
}

// EntryPath is the session's registry entry file.
func (s *Session) EntryPath() string {
	return filepath.Join(s.registryDir, strconv.Itoa(s.pid)+".json")
}

// KeyPath is the session's key file.
func (s *Session) KeyPath() string { return KeyPath(s.registryDir, s.pid, s.sock) }

// Key reads the session's key file.
func (s *Session) Key() (KeyFile, error) {
	b, err := os.ReadFile(s.KeyPath())
	if err != nil {
		return KeyFile{}, err
	}
	var k KeyFile
	if err := json.Unmarshal(b, &k); err != nil {
		return KeyFile{}, fmt.Errorf("%s: %w", s.KeyPath(), err)
	}
	return k, nil
}

// KeyPath is where a session with this pid and socket keeps its key file.
func KeyPath(registryDir string, pid int, socketPath string) string {
	sum := sha256.Sum256([]byte(socketPath))
	return filepath.Join(registryDir, fmt.Sprintf("%d.%s.key", pid, hex.EncodeToString(sum[:])))
}

// Ref is the short ref ListAgents prints after a session's name
// ("name [ref]"): the first 6 hex digits of sha256("session:" + socket path),
// as 2.1.332 computes it while its stable-address flag is off.
func Ref(socketPath string) string {
	sum := sha256.Sum256([]byte("session:" + socketPath))
	return hex.EncodeToString(sum[:])[:6]
}

// ProcStart is field 22 of /proc/<pid>/stat (start time in clock ticks), the
// string Claude Code stores as procStart.
func ProcStart(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) may hold spaces and parentheses: count
	// fields after its closing parenthesis, which is field 3's predecessor.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	return f[22-3], nil
}

func readEntry(path string) (RegistryEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return RegistryEntry{}, err
	}
	var e RegistryEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return RegistryEntry{}, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}

// waitBound polls the registry until the session's entry names a socket that
// exists and its key file is written: then the session accepts peers.
func (s *Session) waitBound(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for n := 0; ; n++ {
		// A dialog before the session binds (development channels')
		// is confirmed; a key pressed as it first draws is lost, so
		// again while it shows.
		if s.opts.Confirm != "" && s.opts.Mode == ModeTUI && n%10 == 0 {
			if screen, err := s.Screen(); err == nil && strings.Contains(screen, s.opts.Confirm) {
				_ = s.Keys("Enter")
			}
		}
		e, err := readEntry(s.EntryPath())
		switch {
		case err != nil:
			last = err
		case e.MessagingSocketPath == "":
			last = errors.New("registry entry has no messagingSocketPath yet")
		default:
			fi, serr := os.Lstat(e.MessagingSocketPath)
			_, kerr := os.Stat(KeyPath(s.registryDir, s.pid, e.MessagingSocketPath))
			switch {
			case serr != nil:
				last = serr
			case fi.Mode()&os.ModeSocket == 0:
				last = fmt.Errorf("%s is not a socket", e.MessagingSocketPath)
			case kerr != nil:
				last = kerr
			case e.Status == "":
				// The CLI writes the entry again once it settles: wait for
				// that, so callers see the final name and status.
				last = errors.New("registry entry has no status yet")
			case s.opts.Name != "" && e.Name != s.opts.Name:
				last = fmt.Errorf("registry entry names %q, not yet %q", e.Name, s.opts.Name)
			default:
				s.sock, s.sessionID, s.name, s.procStart = e.MessagingSocketPath, e.SessionID, e.Name, e.ProcStart
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("%w before binding (%v); last check: %v", ErrExited, s.exitErr(), last)
		case <-ctx.Done():
			return fmt.Errorf("%w; last check: %v", context.Cause(ctx), last)
		case <-tick.C:
		}
	}
}
