package uds

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sessiongateway/gateway/internal/safefile"
)

// SocketLedger is a file, in a private directory, listing the socket files
// a process bound. A socket file outlives a process killed with SIGKILL, and
// a leg's socket is named for its pid, so a restart never binds the old path
// again: the next start sweeps what the ledger lists instead.
type SocketLedger string

// maxLedger bounds the ledger read at start.
const maxLedger = 64 << 10

// Sweep removes the stale socket files the ledger lists and returns their
// paths. A listed path is removed only when it is a socket file itself (a
// symlink is never followed), owned by our uid, and a connect to it is
// refused: nobody listens there. Anything else listed is left alone. No
// ledger yet sweeps nothing.
func (l SocketLedger) Sweep() ([]string, error) {
	b, err := safefile.ReadCapped(string(l), maxLedger)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for p := range strings.SplitSeq(string(b), "\n") {
		if filepath.IsAbs(p) && removeStale(p) {
			removed = append(removed, p)
		}
	}
	return removed, nil
}

// Record replaces the ledger's list with paths.
func (l SocketLedger) Record(paths ...string) error {
	return safefile.WriteAtomic(string(l), []byte(strings.Join(paths, "\n")+"\n"))
}

// removeStale removes path if it is a stale socket file of ours.
func removeStale(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != fs.ModeSocket {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return false
	}
	if !errors.Is(Probe(context.Background(), path), ErrRefused) {
		return false // live, busy or unreadable: not provably stale
	}
	return safefile.RemoveIfSame(path, fi) == nil
}
