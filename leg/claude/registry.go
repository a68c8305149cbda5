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

	"github.com/sessiongateway/gateway/internal/safefile"
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

	// What the real CLI's roster tells apart and a string field cannot:
	// a procStart or pidDomain that is present but empty (judged, and
	// never matching) from one that is absent (not judged), and a spare or
	// parked session (never listed). ParseEntry fills them.
	hasProcStart bool
	hasPidDomain bool
	parked       bool
}

// KeyFile is <pid>.<sha256 of socket path>.key.
type KeyFile struct {
	PeerToken string `json:"peerToken"`
	ProcStart string `json:"procStart"`
	PidDomain string `json:"pidDomain"`
}

// maxEntry and maxKey cap what we read from files anyone of the user may
// have written, as the real CLI does: 256 KiB per entry, 4 KiB per key file.
const (
	maxEntry = 256 << 10
	maxKey   = 4 << 10
)

// knownStatus and knownNameSource are whitelisted on read like the real CLI:
// other values read as empty.
var (
	knownStatus     = map[string]bool{"idle": true, "busy": true, "shell": true, "waiting": true}
	knownNameSource = map[string]bool{"user": true, "peer": true, "derived": true, "collision": true, "auto": true, "hook": true}
)

// ParseEntry decodes a registry record and checks what the roster relies on.
// It reads fields as the real CLI does: keys match exactly (not the way
// encoding/json folds case), and a field of the wrong type reads as absent
// rather than spoiling the record. Only pid is required.
func ParseEntry(b []byte) (Entry, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return Entry{}, fmt.Errorf("registry entry: %w", err)
	}
	var e Entry
	if !decodeField(raw, "pid", &e.PID) || e.PID <= 0 {
		return Entry{}, errors.New("registry entry: no pid")
	}
	e.ProcStart, e.hasProcStart = stringField(raw, "procStart")
	e.PidDomain, e.hasPidDomain = stringField(raw, "pidDomain")
	for key, dst := range map[string]*string{
		"sessionId": &e.SessionID, "cwd": &e.Cwd, "version": &e.Version, "kind": &e.Kind,
		"entrypoint": &e.Entrypoint, "messagingSocketPath": &e.MessagingSocketPath, "name": &e.Name,
		"nameSource": &e.NameSource, "status": &e.Status, "bridgeSessionId": &e.BridgeSessionID,
	} {
		*dst, _ = stringField(raw, key)
	}
	for key, dst := range map[string]*int64{
		"startedAt": &e.StartedAt, "nameSince": &e.NameSince, "updatedAt": &e.UpdatedAt, "statusUpdatedAt": &e.StatusUpdatedAt,
	} {
		if !decodeField(raw, key, dst) {
			*dst = 0
		}
	}
	if !decodeField(raw, "peerProtocol", &e.PeerProtocol) {
		e.PeerProtocol = 0
	}
	var features []json.RawMessage
	if decodeField(raw, "peerFeatures", &features) {
		for _, f := range features {
			var s string
			if isJSONString(f) && json.Unmarshal(f, &s) == nil {
				e.PeerFeatures = append(e.PeerFeatures, s)
			}
		}
	}
	if !knownStatus[e.Status] {
		e.Status = ""
	}
	if !knownNameSource[e.NameSource] {
		e.NameSource = ""
	}
	// The real CLI: spare === true, or any string parkedJobId.
	e.parked = string(raw["spare"]) == "true" || isJSONString(raw["parkedJobId"])
	return e, nil
}

// stringField reads key when it holds a JSON string.
func stringField(raw map[string]json.RawMessage, key string) (string, bool) {
	var s string
	if !isJSONString(raw[key]) || json.Unmarshal(raw[key], &s) != nil {
		return "", false
	}
	return s, true
}

// decodeField decodes key into dst; false when it is absent, null or of
// another type.
func decodeField(raw map[string]json.RawMessage, key string, dst any) bool {
	v, ok := raw[key]
	return ok && string(v) != "null" && json.Unmarshal(v, dst) == nil
}

// isJSONString: the raw value is a string (null and absent are not).
func isJSONString(v json.RawMessage) bool { return len(v) > 0 && v[0] == '"' }

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

// entryPID matches <pid>.json, the only records the roster reads.
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
	// Canonical only, like the real CLI: 042.json is not pid 42's entry.
	return pid, err == nil && pid > 0 && strconv.Itoa(pid) == s
}

// entryOf reads the registry entry of pid, if there is a usable one.
func (p *Leg) entryOf(pid int) (Entry, bool) {
	e, err := p.entries.Get(filepath.Join(p.sessionsDir, strconv.Itoa(pid)+".json"))
	return e, err == nil && e.PID == pid
}

// Registry kinds the gateway writes: itself, and its alias workers.
const (
	KindGateway = "gateway"
	KindAlias   = "gateway-alias"
)

// writeFiles claims the key file, then the registry entry. keyPath and
// regPath are set only once the claim succeeded, so removeFiles, on this
// error path and at shutdown, removes our files and never the ones a claim
// refused to touch (another live process's).
func (p *Leg) writeFiles() error {
	keyPath := filepath.Join(p.sessionsDir, KeyFileName(p.pid, p.socketPath))
	kb, err := json.Marshal(KeyFile{PeerToken: p.peerToken, ProcStart: p.procStart, PidDomain: p.pidDomain})
	if err != nil {
		return err
	}
	if err := p.claimFile(keyPath, kb); err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	p.keyPath = keyPath
	now := p.startedAt.UnixMilli()
	e := Entry{
		PID: p.pid, SessionID: p.sessionID, Cwd: p.cfg.Cwd, StartedAt: now,
		ProcStart: p.procStart, Version: p.cfg.Version, PeerProtocol: 1,
		PeerFeatures: []string{"notify_idle", "reply_across_default_dirs"},
		Kind:         p.cfg.Kind, Entrypoint: "gateway", PidDomain: p.pidDomain,
		MessagingSocketPath: p.socketPath, Name: p.cfg.Name, NameSource: "user", NameSince: now,
		Status: "idle", UpdatedAt: now, StatusUpdatedAt: now,
	}
	eb, err := json.Marshal(e)
	if err != nil {
		return err
	}
	regPath := filepath.Join(p.sessionsDir, strconv.Itoa(p.pid)+".json")
	if err := p.claimFile(regPath, eb); err != nil {
		return fmt.Errorf("registry entry: %w", err)
	}
	p.regPath = regPath
	return nil
}

// ErrLiveOwner means a file we would write belongs to another live process.
var ErrLiveOwner = errors.New("file belongs to another live process")

// claimFile writes path, never over the file of another live process: it is
// created exclusively, and an existing one is replaced only when its process
// (same pid as ours, so possibly another pid namespace) is proven gone.
func (p *Leg) claimFile(path string, data []byte) error {
	err := safefile.CreateExclusive(path, data)
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	old, err := safefile.ReadCapped(path, maxEntry)
	if err != nil {
		// A symlink, a non-regular or an oversized file is nothing we wrote
		// and nothing we may replace.
		return fmt.Errorf("%s exists and cannot be checked: %w", path, err)
	}
	// Read the fields as ParseEntry does (exact keys, wrong types absent),
	// so a record the real CLI would see as another's is refused here too.
	var raw map[string]json.RawMessage
	if json.Unmarshal(old, &raw) == nil {
		procStart, _ := stringField(raw, "procStart")
		pidDomain, _ := stringField(raw, "pidDomain")
		if pidDomain != "" && pidDomain != p.pidDomain {
			return fmt.Errorf("%s: %w (pid domain %s)", path, ErrLiveOwner, pidDomain)
		}
		if procStart == p.procStart {
			return fmt.Errorf("%s: %w (this very process registered twice)", path, ErrLiveOwner)
		}
	}
	// Same pid domain, other start time (or no record at all): the file of a
	// dead earlier holder of our pid, since in our pid namespace we hold it now.
	p.log.Info("replacing a stale file left by an earlier process with our pid", "file", path)
	return safefile.WriteAtomic(path, data)
}

func (p *Leg) removeFiles() {
	for _, f := range []string{p.regPath, p.keyPath} {
		if f == "" {
			continue
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			p.log.Warn("removing registration file failed", "file", f, "err", err)
		}
	}
}
