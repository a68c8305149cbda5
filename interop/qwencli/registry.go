package qwencli

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Token is a bearer secret (an ipcToken, a replyToken or a controller token).
// It prints as [redacted] with fmt and slog, so a record in a failure message
// does not leak it; string(tok) is the value.
type Token string

// String redacts the token.
func (Token) String() string { return "[redacted]" }

// GoString redacts the token for %#v too.
func (Token) GoString() string { return "[redacted]" }

// LogValue redacts the token for slog.
func (Token) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// Record is a session record, $QWEN_HOME/sessions/<pid>.json or
// <pid>-<8 hex>.json, as schema version 1 spells it. Nullable fields read as
// their zero value.
type Record struct {
	SchemaVersion int    `json:"schemaVersion"`
	PID           int    `json:"pid"`
	ProcStart     string `json:"procStart"` // <boot id>:<field 22 of /proc/<pid>/stat>
	PIDNs         uint64 `json:"pidNs"`     // inode of /proc/<pid>/ns/pid
	SessionID     string `json:"sessionId"`
	Cwd           string `json:"cwd"`
	Name          string `json:"name"`
	StartedAt     int64  `json:"startedAt"` // Unix ms
	QwenVersion   string `json:"qwenVersion"`
	Kind          string `json:"kind"` // tui, headless, serve, external
	IPCPath       string `json:"ipcPath,omitempty"`
	IPCToken      Token  `json:"ipcToken,omitempty"` // absent in `qwen sessions ps --json`
}

// ErrBadRecord is returned for bytes that are not a session record.
var ErrBadRecord = errors.New("qwencli: not a session record")

// ParseRecord decodes one record. It checks only what every reader relies
// on: a JSON object with a positive pid and a session id.
func ParseRecord(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	if r.PID <= 0 || r.SessionID == "" {
		return Record{}, fmt.Errorf("%w: no pid or sessionId", ErrBadRecord)
	}
	return r, nil
}

// ReadRecord reads and decodes a record file.
func ReadRecord(path string) (Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Record{}, err
	}
	r, err := ParseRecord(b)
	if err != nil {
		return Record{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// ParseRecordLines decodes JSON lines of records, the output of
// `qwen sessions ps --json`. Blank lines are skipped; any other line that is
// not a record is an error.
func ParseRecordLines(b []byte) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		r, err := ParseRecord(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	return out, nil
}

// Ref is the short handle sessions show after a name, "name [ref]": the
// first 6 hex digits of sha256(sessionId).
func Ref(sessionID string) string {
	sum := sha256.Sum256([]byte(sessionID))
	return hex.EncodeToString(sum[:])[:6]
}

// ProcStart is what Qwen Code records as procStart for a process on Linux:
// "<boot id>:<start time in clock ticks>".
func ProcStart(pid int) (string, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	f, err := statFields(pid)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(boot)) + ":" + f[22-3], nil
}

// PIDNs is the inode of /proc/<pid>/ns/pid, what a record holds as pidNs.
func PIDNs(pid int) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/pid", pid), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// statFields is /proc/<pid>/stat from field 3 (the state) on. The command
// name, field 2, may hold spaces and parentheses, so fields are counted from
// its closing parenthesis.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	return f, nil
}

// alive reports whether pid is a running process that is not a zombie.
func alive(pid int) bool {
	f, err := statFields(pid)
	return err == nil && f[0] != "Z" && f[0] != "X"
}

// descendsFrom reports whether pid is ancestor or one of its descendants.
func descendsFrom(pid, ancestor int) bool {
	for range 64 { // a bound, in case /proc lies
		if pid == ancestor {
			return true
		}
		if pid <= 1 {
			return false
		}
		f, err := statFields(pid)
		if err != nil {
			return false
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			return false
		}
		pid = ppid
	}
	return false
}

// records reads every record in a registry directory, skipping files that
// are not records (temp files, or ones being replaced).
func records(dir string) []recordFile {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []recordFile
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if r, err := ReadRecord(path); err == nil {
			out = append(out, recordFile{path, r})
		}
	}
	return out
}

type recordFile struct {
	path string
	rec  Record
}
