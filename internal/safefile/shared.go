package safefile

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// EnsureSharedDir is EnsureDir for a directory we share with other
// programs of this user, such as a session registry whose records say
// which sockets we dial: it is created 0700 when missing, and read bits
// for group or others are taken away as EnsureDir does. But a directory
// that group or others may write, or that another user owns, is refused
// and left as it is: whatever was planted while it was open cannot be
// told from the real thing, so the user has to look, not us repair.
func EnsureSharedDir(path string) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return pathErr("ensure dir", path, err)
	}
	fd, st, err := checkShared(path)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if st.Mode&0o077 != 0 {
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return pathErr("ensure dir", path, &os.PathError{Op: "fchmod", Path: path, Err: err})
		}
	}
	return nil
}

// CheckSharedDir applies EnsureSharedDir's checks without changing
// anything: a real directory (not a symlink), ours, that no one else may
// write. Readers call it before each read of the directory, since its mode
// can change while we run.
func CheckSharedDir(path string) error {
	fd, _, err := checkShared(path)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

func checkShared(path string) (int, *unix.Stat_t, error) {
	fd, st, err := openDir(path)
	if err == nil {
		err = checkOwner(st)
	}
	if err == nil && st.Mode&0o022 != 0 {
		err = &ModeError{Mode: fs.ModeDir | fs.FileMode(st.Mode&0o777), Mask: 0o022}
	}
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, nil, pathErr("check dir", path, err)
	}
	return fd, st, nil
}
