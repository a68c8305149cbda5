package leg

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sessiongateway/gateway/message"
)

// CheckWorkDir is the directory a session the gateway starts (a hosted
// CLI, a dispatched background agent) may work in, made absolute: it must
// exist, be a directory, and belong to this user. Its errors match
// message.ErrBadStart.
func CheckWorkDir(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("%w: no cwd given", message.ErrBadStart)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %v", message.ErrBadStart, err)
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: cwd %s is not a directory", message.ErrBadStart, abs)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return "", fmt.Errorf("%w: cwd %s belongs to uid %d, not to this user", message.ErrBadStart, abs, st.Uid)
	}
	return abs, nil
}
