package hosted

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// reapStale kills what is left of a session's CLI from a gateway that
// ended without stopping it (SIGKILL): Pdeathsig reaches the process the
// gateway started, not the children it started itself (Qwen Code's
// launcher runs the CLI as a child). A process is taken only when it is in
// the recorded process group and its command line names the session's id,
// so a reused pid is never killed.
func reapStale(pgid int, sessionID string) int {
	if pgid <= 1 || sessionID == "" {
		return 0
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	killed := 0
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err != nil || g != pgid {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(sessionID)) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	return killed
}
