package claude

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// maxSocketPath is the longest socket path the real CLI uses before falling
// back to /tmp/cc-socks-<uid>: 103 bytes, leaving room in sun_path.
const maxSocketPath = 103

// SocketPath is where a session with pid binds, as the real CLI picks it:
// $XDG_RUNTIME_DIR/cc-socks when set, else /tmp/cc-socks; over 103 bytes,
// /tmp/cc-socks-<uid>.
func SocketPath(runtimeDir, tmpDir string, pid, uid int) string {
	if tmpDir == "" {
		tmpDir = "/tmp"
	}
	dir := filepath.Join(tmpDir, "cc-socks")
	if runtimeDir != "" {
		dir = filepath.Join(runtimeDir, "cc-socks")
	}
	p := filepath.Join(dir, fmt.Sprintf("%d.sock", pid))
	if len(p) > maxSocketPath {
		p = filepath.Join(tmpDir, fmt.Sprintf("cc-socks-%d", uid), fmt.Sprintf("%d.sock", pid))
	}
	return p
}

// ConfigDir is $CLAUDE_CONFIG_DIR, else ~/.claude.
func ConfigDir() (string, error) {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory for ~/.claude: %w", err)
	}
	return filepath.Join(home, ".claude"), nil
}

// KeyFileName is <pid>.<sha256 hex of the socket path>.key.
func KeyFileName(pid int, socketPath string) string {
	return fmt.Sprintf("%d.%s.key", pid, socketHash(socketPath))
}

func socketHash(socketPath string) string {
	sum := sha256.Sum256([]byte(socketPath))
	return hex.EncodeToString(sum[:])
}

// replyName is what the real CLI accepts as the file name of a reply socket.
var replyName = regexp.MustCompile(`^(?:[0-9]+|[0-9]+-[0-9a-f]{8}|[0-9a-f]{1,16})\.sock$`)

// ReplyDirs are the directories the real CLI accepts reply sockets in, for uid,
// beside the directory of its own socket.
func ReplyDirs(uid int, runtimeDir, tmpDir string) []string {
	if tmpDir == "" {
		tmpDir = "/tmp"
	}
	dirs := []string{
		filepath.Join(tmpDir, "cc-socks"),
		filepath.Join(tmpDir, fmt.Sprintf("cc-socks-%d", uid)),
		fmt.Sprintf("/run/user/%d/cc-socks", uid),
		"/tmp/cc-socks",
		fmt.Sprintf("/tmp/cc-socks-%d", uid),
	}
	if runtimeDir != "" {
		dirs = append(dirs, filepath.Join(runtimeDir, "cc-socks"))
	}
	return dirs
}

// replyPathOK applies the real CLI's rule to a claimed reply socket path:
// absolute, clean, in an allowed directory (or ownDir), with a socket-like name.
func replyPathOK(path, ownDir string, allowed []string) bool {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.ContainsRune(path, 0) {
		return false
	}
	if !replyName.MatchString(filepath.Base(path)) {
		return false
	}
	dir := filepath.Dir(path)
	if dir == ownDir {
		return true
	}
	for _, d := range allowed {
		if dir == d {
			return true
		}
	}
	return false
}

// NativeRef is the ref Claude Code 2.1.332 prints after a name in ListAgents:
// the first 6 hex of sha256("session:" + socket path).
func NativeRef(socketPath string) string {
	sum := sha256.Sum256([]byte("session:" + socketPath))
	return hex.EncodeToString(sum[:])[:6]
}
