package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sessiongateway/gateway/transport/uds"
)

// Entry is a registry record, ~/.claude/sessions/<pid>.json, with the fields
// the real CLI writes. Unknown fields on read are ignored.
type Entry struct {
	PID                 int      `json:"pid"`
	SessionID           string   `json:"sessionId"`
	Cwd                 string   `json:"cwd"`
	StartedAt           int64    `json:"startedAt"`
	ProcStart           string   `json:"procStart"`
	Version             string   `json:"version,omitempty"`
	PeerProtocol        int      `json:"peerProtocol,omitempty"`
	PeerFeatures        []string `json:"peerFeatures,omitempty"`
	Kind                string   `json:"kind,omitempty"`
	Entrypoint          string   `json:"entrypoint,omitempty"`
	PidDomain           string   `json:"pidDomain,omitempty"`
	MessagingSocketPath string   `json:"messagingSocketPath,omitempty"`
	Name                string   `json:"name,omitempty"`
	NameSource          string   `json:"nameSource,omitempty"`
	NameSince           int64    `json:"nameSince,omitempty"`
	Status              string   `json:"status,omitempty"`
	UpdatedAt           int64    `json:"updatedAt,omitempty"`
	StatusUpdatedAt     int64    `json:"statusUpdatedAt,omitempty"`
	BridgeSessionID     string   `json:"bridgeSessionId,omitempty"`
}

// KeyFile is <pid>.<sha256 of socket path>.key.
type KeyFile struct {
	PeerToken string `json:"peerToken"`
	ProcStart string `json:"procStart"`
	PidDomain string `json:"pidDomain"`
}

// maxEntry and maxKey cap what we read from files anyone of the user may
// have written: the real CLI reads key files with a 4 KiB cap.
const (
	maxEntry = 64 << 10
	maxKey   = 4 << 10
)

// knownStatus and knownNameSource are whitelisted on read like the real CLI:
// other values read as empty.
var (
	knownStatus     = map[string]bool{"idle": true, "busy": true, "waiting": true}
	knownNameSource = map[string]bool{"user": true, "derived": true}
)

// ParseEntry decodes a registry record and checks what the roster relies on.
func ParseEntry(b []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, fmt.Errorf("registry entry: %w", err)
	}
	if e.PID <= 0 {
		return Entry{}, errors.New("registry entry: no pid")
	}
	if !knownStatus[e.Status] {
		e.Status = ""
	}
	if !knownNameSource[e.NameSource] {
		e.NameSource = ""
	}
	return e, nil
}

// ParseKeyFile decodes a key file.
func ParseKeyFile(b []byte) (KeyFile, error) {
	var k KeyFile
	if err := json.Unmarshal(b, &k); err != nil {
		return KeyFile{}, fmt.Errorf("key file: %w", err)
	}
	if k.PeerToken == "" {
		return KeyFile{}, errors.New("key file: no peerToken")
	}
	return k, nil
}

// entryFileName matches <pid>.json, the only records the roster reads.
func entryPID(name string) (int, bool) {
	s, ok := strings.CutSuffix(name, ".json")
	if !ok || s == "" {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	pid, err := strconv.Atoi(s)
	return pid, err == nil && pid > 0
}

// readEntries reads every <pid>.json in dir; bad ones are reported by name.
func readEntries(dir string) (entries []Entry, bad map[string]error, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	bad = map[string]error{}
	for _, de := range ents {
		pid, ok := entryPID(de.Name())
		if !ok || !de.Type().IsRegular() {
			continue
		}
		b, err := uds.ReadFileCapped(filepath.Join(dir, de.Name()), maxEntry)
		if err != nil {
			bad[de.Name()] = err
			continue
		}
		e, err := ParseEntry(b)
		if err != nil {
			bad[de.Name()] = err
			continue
		}
		if e.PID != pid {
			bad[de.Name()] = fmt.Errorf("pid %d in a file named for %d", e.PID, pid)
			continue
		}
		entries = append(entries, e)
	}
	return entries, bad, nil
}
