package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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

// ReplaceShared replaces a file we share with other programs of this user
// (Claude Code's settings.json, say) with data, keeping the mode it has (or
// giving a new file mode), so that a reader sees the old file or the new
// one, never a part. Its directory must pass CheckSharedDir; a symlink, a
// non-regular file, or a file another user owns at path is refused, never
// written through or over.
func ReplaceShared(path string, data []byte, mode fs.FileMode) error {
	return replaceShared(path, data, mode, true)
}

// WriteShared is ReplaceShared for a file that must be private (a copy of
// one that may hold secrets): it is left mode 0600 whatever it had.
func WriteShared(path string, data []byte) error {
	return replaceShared(path, data, 0o600, false)
}

func replaceShared(path string, data []byte, mode fs.FileMode, keepMode bool) error {
	dir, base := filepath.Dir(path), filepath.Base(path)
	wrap := func(err error) error { return pathErr("replace", path, err) }
	if strings.HasSuffix(path, "/") || base == "." || base == ".." || base == "/" {
		return wrap(errors.New("not a file name"))
	}
	dfd, _, err := checkShared(dir)
	if err != nil {
		return wrap(fmt.Errorf("directory: %w", err))
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	switch err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return wrap(&os.PathError{Op: "lstat", Path: path, Err: err})
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return wrap(ErrSymlink)
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return wrap(ErrNotRegular)
	default:
		if err := checkOwner(&st); err != nil {
			return wrap(err)
		}
		if keepMode {
			mode = fs.FileMode(st.Mode & 0o777)
		}
	}
	tmp, f, err := createTemp(dfd, dir)
	if err != nil {
		return wrap(err)
	}
	placed := false
	defer func() {
		if !placed {
			_ = unix.Unlinkat(dfd, tmp, 0)
		}
	}()
	if err := f.Chmod(mode.Perm()); err != nil {
		_ = f.Close()
		return wrap(err)
	}
	if err := writeSync(f, data); err != nil {
		return wrap(err)
	}
	if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
		return wrap(&os.LinkError{Op: "rename", Old: tmp, New: path, Err: err})
	}
	placed = true
	if err := unix.Fsync(dfd); err != nil {
		return wrap(&os.PathError{Op: "fsync", Path: dir, Err: err})
	}
	return nil
}
