package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// DirError is a directory EnsureDir would refuse or could not work in:
// what is wrong with it and what the user can do about it.
type DirError struct {
	Path string
	Err  error  // ErrNotDir, ErrSymlink, ErrNotOwner, fs.ErrPermission, or the stat's error
	Fix  string // what to do, addressed to a person
}

func (e *DirError) Error() string { return fmt.Sprintf("%s: %v; %s", e.Path, e.Err, e.Fix) }
func (e *DirError) Unwrap() error { return e.Err }

// UsableDir says why path cannot be the private directory EnsureDir makes
// of it, before anything reads a file inside (whose error would blame the
// file): not a directory, a symlink, another user's, or without read, write
// and search permission for us. A path that does not exist yet is usable
// (EnsureDir creates it), and so are loose permission bits (EnsureDir
// tightens them).
func UsableDir(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, syscall.ENOTDIR):
		return &DirError{Path: path, Err: ErrNotDir, Fix: "a part of the path is a file; use another directory"}
	case err != nil:
		return &DirError{Path: path, Err: err, Fix: "check the permissions of the directories above it, or use another directory"}
	case fi.Mode()&fs.ModeSymlink != 0:
		return &DirError{Path: path, Err: ErrSymlink, Fix: "it is never followed; give the real directory's path"}
	case !fi.IsDir():
		return &DirError{Path: path, Err: ErrNotDir, Fix: "move the file away or use another directory"}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if euid := os.Geteuid(); int(st.Uid) != euid {
			return &DirError{Path: path, Err: fmt.Errorf("%w (owner uid %d, we are %d)", ErrNotOwner, st.Uid, euid),
				Fix: fmt.Sprintf("chown it to uid %d, or use a directory of your own", euid)}
		}
	}
	if err := unix.Faccessat(unix.AT_FDCWD, path, unix.R_OK|unix.W_OK|unix.X_OK, unix.AT_EACCESS); err != nil {
		return &DirError{Path: path, Err: fmt.Errorf("%w: mode %04o, and the gateway needs to read, write and enter it", fs.ErrPermission, fi.Mode().Perm()),
			Fix: "run chmod 700 " + path}
	}
	return nil
}
