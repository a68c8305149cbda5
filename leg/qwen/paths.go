package qwen

import (
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// HomeDir resolves Qwen Code's home as it does: $QWEN_HOME when set ("~"
// and a leading "~/" expand to userHome; a relative path is taken from cwd),
// else userHome/.qwen, or tmpDir/.qwen when there is no user home.
func HomeDir(qwenHome, userHome, cwd, tmpDir string) string {
	if qwenHome == "" {
		if userHome == "" {
			return filepath.Join(tmpDir, ".qwen")
		}
		return filepath.Join(userHome, ".qwen")
	}
	p := qwenHome
	switch {
	case p == "~":
		p = userHome
	case strings.HasPrefix(p, "~/"), strings.HasPrefix(p, `~\`):
		p = filepath.Join(userHome, strings.ReplaceAll(p[2:], `\`, "/"))
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// SessionsDir is where records live: <home>/sessions (directory 0700).
func SessionsDir(home string) string { return filepath.Join(home, "sessions") }

// ControllersFile is Qwen Code's controller grants: <home>/peer-controllers.json.
func ControllersFile(home string) string { return filepath.Join(home, "peer-controllers.json") }

// NodeTmpDir is Node's os.tmpdir(): $TMPDIR, $TMP or $TEMP, else /tmp,
// without a trailing slash. getenv is os.Getenv in production.
func NodeTmpDir(getenv func(string) string) string {
	d := "/tmp"
	for _, k := range []string{"TMPDIR", "TMP", "TEMP"} {
		if v := getenv(k); v != "" {
			d = v
			break
		}
	}
	if len(d) > 1 {
		d = strings.TrimSuffix(d, "/")
	}
	return d
}

// suffixHex is the length of the minted suffix in <pid>-<suffix>.json and
// .sock names.
const suffixHex = 8

// NewSuffix mints the 8-hex suffix of a record or socket name.
func NewSuffix() string { return randomHex(suffixHex / 2) }

// RecordFileName is <pid>.json, or <pid>-<suffix>.json with a suffix from
// NewSuffix.
func RecordFileName(pid int, suffix string) string {
	if suffix == "" {
		return strconv.Itoa(pid) + ".json"
	}
	return strconv.Itoa(pid) + "-" + suffix + ".json"
}

// ParseRecordFileName reads <pid>.json or <pid>-<8 lowercase hex>.json. The
// pid must be in canonical decimal (no sign, no leading zero) and a safe
// JavaScript integer, so that "0041.json" agrees with no record.
func ParseRecordFileName(name string) (pid int, suffix string, ok bool) {
	return parsePIDName(name, ".json")
}

// ParseSocketFileName reads <pid>.sock or <pid>-<8 lowercase hex>.sock, the
// names Qwen Code binds and sweeps. Unlike record names, Qwen Code does not
// insist on canonical decimal here; neither does this.
func ParseSocketFileName(name string) (pid int, suffix string, ok bool) {
	stem, found := strings.CutSuffix(name, ".sock")
	if !found {
		return 0, "", false
	}
	digits, suffix, _ := strings.Cut(stem, "-")
	if !allDigits(digits) || strings.Contains(stem, "-") && !isHexToken(suffix, suffixHex) {
		return 0, "", false
	}
	pid, err := strconv.Atoi(strings.TrimLeft(digits, "0"))
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	return pid, suffix, true
}

func parsePIDName(name, ext string) (int, string, bool) {
	stem, found := strings.CutSuffix(name, ext)
	if !found {
		return 0, "", false
	}
	digits, suffix, dashed := strings.Cut(stem, "-")
	if !allDigits(digits) || dashed && !isHexToken(suffix, suffixHex) {
		return 0, "", false
	}
	if digits[0] == '0' || len(digits) > 16 {
		return 0, "", false
	}
	pid, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || pid <= 0 || pid > 1<<53-1 {
		return 0, "", false
	}
	return int(pid), suffix, true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// IsTempFileName reports whether name is one of Qwen Code's record temp
// files, <record name>.<12 hex>.tmp. A lister deletes one older than
// TempMaxAge: its writer died between write and rename. (Ours, written by
// safefile.WriteAtomic, are named .tmp-<hex> and never match.)
func IsTempFileName(name string) bool {
	stem, ok := strings.CutSuffix(name, ".tmp")
	if !ok {
		return false
	}
	i := strings.LastIndexByte(stem, '.')
	if i < 0 || !isHexToken(stem[i+1:], 12) {
		return false
	}
	rec := stem[:i]
	digits, suffix, dashed := strings.Cut(strings.TrimSuffix(rec, ".json"), "-")
	return strings.HasSuffix(rec, ".json") && allDigits(digits) && (!dashed || isHexToken(suffix, suffixHex))
}

// TempMaxAge is the age past which a lister removes a record temp file.
const TempMaxAge = 5 * time.Minute

// Socket placement, as Qwen Code picks it.
const (
	// MaxSocketPathBytes: a candidate longer than this is skipped.
	MaxSocketPathBytes = 103
	// SocketDirName is the runtime-dir subdirectory, and the prefix of the
	// per-process fallback directories qwen-socks-<16 hex>.
	SocketDirName = "qwen-socks"
	// nonceHex is the length of a fallback directory's random part.
	nonceHex = 16
)

// NewSocketNonce mints the 16-hex part of a fallback directory name. Qwen
// Code mints one per start, shared by the $TMPDIR and /tmp candidates.
func NewSocketNonce() string { return randomHex(nonceHex / 2) }

// InboxCandidates lists where an inbox for pid may bind, in order: in
// runtimeDir ($XDG_RUNTIME_DIR, skipped when empty) qwen-socks/<pid>.sock,
// then qwen-socks-<nonce>/<pid>.sock in tmpDir (NodeTmpDir) and in /tmp.
// Paths longer than MaxSocketPathBytes, relative ones (from a relative
// $XDG_RUNTIME_DIR or $TMPDIR, which Qwen Code tries and fails to bind) and
// repeats are left out. The first that binds wins; if a live listener holds
// it, SiblingSocketPath. Directories are 0700, the socket 0600.
func InboxCandidates(runtimeDir, tmpDir string, pid int, nonce string) []string {
	name := strconv.Itoa(pid) + ".sock"
	var all []string
	if runtimeDir != "" {
		all = append(all, filepath.Join(runtimeDir, SocketDirName, name))
	}
	nonceDir := SocketDirName + "-" + nonce
	all = append(all, filepath.Join(tmpDir, nonceDir, name), filepath.Join("/tmp", nonceDir, name))
	var out []string
	for _, p := range all {
		if len(p) <= MaxSocketPathBytes && IsLocalIPCPath(p) && !contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// SiblingSocketPath is the name to bind instead of path when a live
// listener already holds it (two pid namespaces sharing a runtime
// directory): <pid>-<suffix>.sock beside it. ok is false when that is longer
// than MaxSocketPathBytes.
func SiblingSocketPath(path, suffix string) (sibling string, ok bool) {
	base := strings.TrimSuffix(filepath.Base(path), ".sock")
	base, _, _ = strings.Cut(base, "-")
	sibling = filepath.Join(filepath.Dir(path), base+"-"+suffix+".sock")
	return sibling, len(sibling) <= MaxSocketPathBytes
}

// IsNonceDirName reports whether name is a fallback socket directory,
// qwen-socks-<16 hex>. Qwen Code sweeps such a directory when every socket
// in it is dead, or when it has been empty for a minute.
func IsNonceDirName(name string) bool {
	rest, ok := strings.CutPrefix(name, SocketDirName+"-")
	return ok && isHexToken(rest, nonceHex)
}

// IsLocalIPCPath is the check both sides apply before dialing a path read
// from a record or a frame: non-empty, no NUL, absolute, and not "//..."
// (which some systems read as a network path).
func IsLocalIPCPath(p string) bool {
	return p != "" && !strings.ContainsRune(p, 0) && !strings.HasPrefix(p, "//") && filepath.IsAbs(p)
}
