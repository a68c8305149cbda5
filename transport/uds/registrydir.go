package uds

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/sessiongateway/gateway/internal/safefile"
)

// ErrUnsafeRegistry: the session registry directory is writable by group or
// others, or not ours, so none of its records is believed: nothing in it is
// listed or dialed until the user repairs it (chmod 700, chown).
var ErrUnsafeRegistry = errors.New("session registry directory is unsafe")

// RegistryDir is a session registry directory that other programs of this
// user write in too. Its mode and owner can change while we run, so it is
// checked before each read, not only at start.
type RegistryDir struct {
	Path    string
	Log     *slog.Logger
	refused atomic.Bool
	good    atomic.Pointer[dirStamp] // what lstat said at the last check that passed
}

// dirStamp is what a check depends on: the directory itself (not a
// symlink), its mode and its owner.
type dirStamp struct {
	fi  fs.FileInfo
	uid uint32
}

func lstatDir(path string) (dirStamp, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return dirStamp{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return dirStamp{}, false
	}
	return dirStamp{fi: fi, uid: st.Uid}, true
}

func (d dirStamp) same(o *dirStamp) bool {
	return o != nil && os.SameFile(d.fi, o.fi) && d.fi.Mode() == o.fi.Mode() && d.uid == o.uid
}

// Check reports whether the directory may be read now: nil when it is
// safe or does not exist (no records), else an error matching
// ErrUnsafeRegistry that says why. The first refusal after a good check is
// logged as a warning, and the repair after a refusal as information.
func (d *RegistryDir) Check() error {
	// The same directory with the same mode and owner as at the last
	// check that passed passes again: one lstat, not an open.
	stamp, isDir := lstatDir(d.Path)
	if isDir && stamp.same(d.good.Load()) {
		return nil
	}
	err := safefile.CheckSharedDir(d.Path)
	if err == nil && isDir {
		d.good.Store(&stamp)
	} else {
		d.good.Store(nil)
	}
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		if d.refused.Swap(false) && d.Log != nil {
			d.Log.Info("session registry directory is safe again", "dir", d.Path)
		}
		return nil
	}
	if !d.refused.Swap(true) && d.Log != nil {
		d.Log.Warn("session registry directory refused: its records are neither listed nor dialed until it is ours alone (chmod 700, and chown if another user owns it)",
			"dir", d.Path, "err", err)
	}
	return fmt.Errorf("%w: %w", ErrUnsafeRegistry, err)
}
