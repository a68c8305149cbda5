package qwen

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/uds"
)

// SchemaVersion is the record version we write and the highest we read.
const SchemaVersion = 1

// MaxRecordBytes caps what a reader reads of one record file.
const MaxRecordBytes = 64 << 10

// Kinds a record may carry. Any other kind of at most 16 lowercase ASCII
// letters, digits and dashes, starting with a letter, is kept as written and
// shown as is; anything else is dropped on read, and absent reads as tui.
const (
	KindTUI      = "tui"
	KindHeadless = "headless"
	KindServe    = "serve"
	KindExternal = "external" // what the gateway writes
)

// Record is a session's self-report in $QWEN_HOME/sessions. Every field is
// a claim by the process it describes; nothing that decides what a sender
// may do reads it.
type Record struct {
	PID int
	// ProcStart is "<boot id>:<start ticks>" (boot_id and field 22 of
	// /proc/<pid>/stat); "" is null, written by a non-Linux process.
	ProcStart string
	// PidNS is the inode of the writer's pid namespace; 0 is null. (No
	// namespace has inode 0; a non-integral pidNs reads as 0, which on Linux
	// matches no reader, as in Qwen Code.)
	PidNS       uint64
	SessionID   string
	Cwd         string
	Name        string
	StartedAt   int64  // epoch milliseconds
	QwenVersion string // "" is null; null for us
	Kind        string // "" is absent, shown as tui
	IPCPath     string // "" while no inbox is bound: listed, not messageable
	IPCToken    Token  // "" when the inbox takes no auth line (older builds)
}

// DisplayKind is Kind as a listing shows it: absent reads as tui.
func (r Record) DisplayKind() string {
	if r.Kind == "" {
		return KindTUI
	}
	return r.Kind
}

// holder is who must listen on the record's inbox: its pid, in its pid
// namespace (a null pidNs is read as ours).
func (r Record) holder() uds.Holder { return uds.Holder{PID: r.PID, PidNS: r.PidNS} }

// Ref is the handle listings show after the name.
func (r Record) Ref() string { return Ref(r.SessionID) }

// Errors from ParseRecord. A reader skips the record in both cases and
// never deletes it: it may be a newer writer's, or one being written.
var (
	ErrNewerSchema    = errors.New("record has a newer schemaVersion")
	ErrUnusableRecord = errors.New("record is unusable")
)

// validKind is Qwen Code's read guard for kind: ^[a-z][a-z0-9-]{0,15}$.
// (The protocol page says "lowercase ASCII, digits and dashes"; the code
// also requires a leading letter.)
func validKind(s string) bool {
	if len(s) == 0 || len(s) > 16 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// ParseRecord reads a record as Qwen Code's registry reader does: a JSON
// object whose schemaVersion is a number (above SchemaVersion is
// ErrNewerSchema), pid a positive integer, sessionId, cwd and name strings,
// startedAt a finite number. Optional fields of the wrong type or shape are
// dropped, not refused: procStart (a string), pidNs (a finite number),
// qwenVersion (a string), kind (see the Kind constants), ipcPath and
// ipcToken (non-empty strings). Beyond Qwen Code it refuses invalid UTF-8
// and repeated keys (ErrUnusableRecord either way), and reads procStart ""
// as null, which makes the reader more careful, never less.
//
// The pid is not checked against the file name here; Judge does that.
func ParseRecord(b []byte) (Record, error) {
	o, err := decodeObject(b)
	if err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrUnusableRecord, err)
	}
	v, ok := o.num("schemaVersion")
	if !ok {
		return Record{}, fmt.Errorf("%w: no numeric schemaVersion", ErrUnusableRecord)
	}
	if v > SchemaVersion {
		return Record{}, fmt.Errorf("%w: %v", ErrNewerSchema, v)
	}
	var r Record
	pid, ok := o.num("pid")
	if !ok || pid <= 0 || !isSafeInt(pid) {
		return Record{}, fmt.Errorf("%w: pid is not a positive integer", ErrUnusableRecord)
	}
	r.PID = int(pid)
	var okID, okCwd, okName bool
	r.SessionID, okID = o.str("sessionId")
	r.Cwd, okCwd = o.str("cwd")
	r.Name, okName = o.str("name")
	started, okStart := o.num("startedAt")
	if !okID || !okCwd || !okName || !okStart || math.IsInf(started, 0) {
		return Record{}, fmt.Errorf("%w: sessionId, cwd and name must be strings and startedAt a finite number", ErrUnusableRecord)
	}
	r.StartedAt = clampMillis(started)
	r.ProcStart, _ = o.str("procStart")
	if ns, ok := o.num("pidNs"); ok && ns > 0 && ns == math.Trunc(ns) && ns < 1<<64 {
		r.PidNS = uint64(ns)
	}
	r.QwenVersion, _ = o.str("qwenVersion")
	if k, _ := o.str("kind"); validKind(k) {
		r.Kind = k
	}
	r.IPCPath, _ = o.str("ipcPath")
	tok, _ := o.str("ipcToken")
	r.IPCToken = Token(tok)
	return r, nil
}

func clampMillis(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// recordWire is the record's layout, keys in the order Qwen Code writes
// them (ipcPath and ipcToken last: it patches them in once the inbox is
// bound).
type recordWire struct {
	SchemaVersion int     `json:"schemaVersion"`
	PID           int     `json:"pid"`
	ProcStart     *string `json:"procStart"`
	PidNS         *uint64 `json:"pidNs"`
	SessionID     string  `json:"sessionId"`
	Cwd           string  `json:"cwd"`
	Name          string  `json:"name"`
	StartedAt     int64   `json:"startedAt"`
	QwenVersion   *string `json:"qwenVersion"`
	Kind          string  `json:"kind,omitempty"`
	IPCPath       string  `json:"ipcPath,omitempty"`
	IPCToken      string  `json:"ipcToken,omitempty"`
}

// Marshal lays the record out as Qwen Code does (two-space indent), with
// null for an unknown procStart, pidNs or qwenVersion. It refuses a record
// that does not Validate.
func (r Record) Marshal() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r.encode()
}

// encode lays r out without validating it.
func (r Record) encode() ([]byte, error) {
	w := recordWire{
		SchemaVersion: SchemaVersion, PID: r.PID, SessionID: r.SessionID, Cwd: r.Cwd,
		Name: r.Name, StartedAt: r.StartedAt, Kind: r.Kind, IPCPath: r.IPCPath,
		IPCToken: string(r.IPCToken),
	}
	if r.ProcStart != "" {
		w.ProcStart = &r.ProcStart
	}
	if r.PidNS != 0 {
		w.PidNS = &r.PidNS
	}
	if r.QwenVersion != "" {
		w.QwenVersion = &r.QwenVersion
	}
	return jsonx.MarshalIndent(w, "  ")
}

// ErrInvalidRecord: a record we were about to write breaks a rule readers
// apply, or one the protocol page sets for writers.
var ErrInvalidRecord = errors.New("invalid session record")

// Validate checks a record we write: what readers require, plus what the
// protocol page asks of a writer (a name that is not blank once flattened,
// a valid kind, a 64-hex ipcToken, an absolute ipcPath, and on Linux a
// procStart and pidNs, without which no reader lists it).
func (r Record) Validate() error {
	bad := func(why string) error { return fmt.Errorf("%w: %s", ErrInvalidRecord, why) }
	switch {
	case r.PID <= 0 || r.PID > 1<<53-1:
		return bad("pid must be a positive integer")
	case strings.TrimSpace(r.SessionID) == "":
		return bad("no session id")
	case FlattenLabel(r.Name) == "":
		return bad("name is blank once flattened")
	case r.Kind != "" && !validKind(r.Kind):
		return bad("kind must be lowercase letters, digits and dashes, starting with a letter, at most 16")
	case r.IPCToken != "" && !isHexToken(string(r.IPCToken), 2*tokenBytes):
		return bad("ipcToken must be 64 lowercase hex characters")
	case r.IPCPath != "" && !filepath.IsAbs(r.IPCPath):
		return bad("ipcPath must be absolute")
	case r.ProcStart != "" && !validProcStart(r.ProcStart):
		return bad(`procStart must be "<boot id>:<start ticks>"`)
	case runtime.GOOS == "linux" && (r.ProcStart == "" || r.PidNS == 0):
		return bad("on Linux a record needs procStart and pidNs: readers list none without")
	}
	return validStrings(r.ProcStart, r.SessionID, r.Cwd, r.Name, r.QwenVersion, r.IPCPath)
}

// SameIncarnation reports whether two reads of one record file describe the
// same registration: same pid, pidNs, procStart and startedAt. A lister
// re-reads a record it found dead and deletes it only if this holds, so a
// record rewritten in between by a live process survives.
func SameIncarnation(a, b Record) bool {
	return a.PID == b.PID && a.PidNS == b.PidNS && a.ProcStart == b.ProcStart && a.StartedAt == b.StartedAt
}

// bootOf is the boot id inside a procStart: what precedes the first ':'.
// ok is false when there is no ':', and then the record names no boot.
func bootOf(procStart string) (boot string, ok bool) {
	boot, _, ok = strings.Cut(procStart, ":")
	return boot, ok
}

// validProcStart is what we write: a non-empty boot id, ':', decimal ticks.
func validProcStart(s string) bool {
	boot, ticks, ok := strings.Cut(s, ":")
	if !ok || boot == "" || ticks == "" {
		return false
	}
	for i := 0; i < len(ticks); i++ {
		if ticks[i] < '0' || ticks[i] > '9' {
			return false
		}
	}
	return true
}

func (p *Leg) writeRecord() error {
	procStart, ok := ProcStartToken(p.pid)
	if !ok {
		return errors.New("qwen record: cannot read our own procStart")
	}
	ns, err := uds.PidNamespace(p.pid)
	if err != nil {
		return fmt.Errorf("qwen record: %w", err)
	}
	rec := Record{
		PID: p.pid, ProcStart: procStart, PidNS: ns, SessionID: p.sessionID, Cwd: p.cfg.Cwd,
		Name: p.cfg.Name, StartedAt: p.clk.Now().UnixMilli(), Kind: "external",
		IPCPath: p.socketPath, IPCToken: p.token,
	}
	b, err := rec.Marshal()
	if err != nil {
		return err
	}
	path := filepath.Join(p.sessions, RecordFileName(p.pid, ""))
	err = safefile.CreateExclusive(path, b)
	if errors.Is(err, fs.ErrExist) {
		old, rerr := safefile.ReadCapped(path, MaxRecordBytes)
		if rerr == nil && MayReplace(old, p.pid, p.facts) {
			err = safefile.WriteAtomic(path, b)
		} else {
			// Not provably ours to replace: <pid>-<8 hex>.json (docs/protocols/qwen-cross-session.md#records).
			path = filepath.Join(p.sessions, RecordFileName(p.pid, NewSuffix()))
			err = safefile.CreateExclusive(path, b)
		}
	}
	if err != nil {
		return fmt.Errorf("qwen record: %w", err)
	}
	p.recPath = path
	return nil
}
