package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// EnsureDir creates path (and its parents) with mode 0700 if missing. The
// final directory must be a real directory, not a symlink, owned by our
// effective uid; if it grants group or other bits we tighten it to 0700.
func EnsureDir(path string) error {
	fail := func(err error) error { return pathErr("ensure dir", path, err) }
	if err := os.MkdirAll(path, 0o700); err != nil {
		return fail(err)
	}
	fd, st, err := openDir(path)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(fd)
	if err := checkOwner(st); err != nil {
		return fail(err)
	}
	if st.Mode&0o777 != 0o700 {
		// Through the descriptor, so a swap of the path cannot redirect it.
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return fail(&os.PathError{Op: "fchmod", Path: path, Err: err})
		}
	}
	return nil
}

// CheckDir applies EnsureDir's checks without creating or changing anything:
// a real directory (not a symlink), ours, with no group or other bits.
func CheckDir(path string) error {
	fd, err := OpenDir(path)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// OpenDir opens a directory that passes CheckDir and returns its
// descriptor, for the caller to close. Callers work through the descriptor
// (openat, bind under /proc/self/fd), so the directory checked is the
// directory written.
func OpenDir(path string) (int, error) {
	fd, st, err := openDir(path)
	if err == nil {
		err = checkOwner(st)
	}
	if err == nil && st.Mode&0o077 != 0 {
		err = &ModeError{Mode: fs.ModeDir | fs.FileMode(st.Mode&0o777), Mask: 0o077}
	}
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, pathErr("check dir", path, err)
	}
	return fd, nil
}

func openDir(path string) (int, *unix.Stat_t, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, nil, classifyOpen(path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	return fd, &st, nil
}

// classifyOpen names what O_NOFOLLOW|O_DIRECTORY refused.
func classifyOpen(path string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		if fi, lerr := os.Lstat(path); lerr == nil {
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				return ErrSymlink
			case !fi.IsDir():
				return ErrNotDir
			}
		}
	}
	return &os.PathError{Op: "open", Path: path, Err: err}
}

func checkOwner(st *unix.Stat_t) error {
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return fmt.Errorf("%w (owner uid %d, we are %d)", ErrNotOwner, st.Uid, euid)
	}
	return nil
}

// WriteAtomic replaces path with data, mode 0600, so that a reader sees the
// old file or the new one, never a part. The directory must pass CheckDir;
// a symlink or non-regular file at path is refused.
func WriteAtomic(path string, data []byte) error {
	return writeFile("write", path, data, false)
}

// CreateExclusive writes path like WriteAtomic, but fails with an error
// matching fs.ErrExist if anything (even a dangling symlink) is already at
// path: it never overwrites another process's file.
func CreateExclusive(path string, data []byte) error {
	return writeFile("create", path, data, true)
}

func writeFile(op, path string, data []byte, exclusive bool) (err error) {
	// Dir and Base, not Split: Split leaves a trailing slash on dir, and
	// "link/" resolves the symlink despite O_NOFOLLOW.
	dir, base := filepath.Dir(path), filepath.Base(path)
	wrap := func(err error) error { return pathErr(op, path, err) }
	if strings.HasSuffix(path, "/") || base == "." || base == ".." || base == "/" {
		return wrap(errors.New("not a file name"))
	}
	dfd, err := OpenDir(dir)
	if err != nil {
		return wrap(fmt.Errorf("directory: %w", err))
	}
	defer unix.Close(dfd)

	if !exclusive {
		var st unix.Stat_t
		switch err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
		case errors.Is(err, unix.ENOENT):
		case err != nil:
			return wrap(&os.PathError{Op: "lstat", Path: path, Err: err})
		case uint32(st.Mode)&unix.S_IFMT == unix.S_IFLNK:
			return wrap(ErrSymlink)
		case uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG:
			return wrap(ErrNotRegular)
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
	if err := writeSync(f, data); err != nil {
		return wrap(err)
	}
	if exclusive {
		err = renameNoReplace(dfd, tmp, base)
	} else {
		err = unix.Renameat(dfd, tmp, dfd, base)
	}
	placed = err == nil
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			return wrap(fs.ErrExist)
		}
		return wrap(&os.LinkError{Op: "rename", Old: tmp, New: path, Err: err})
	}
	// Make the new name durable, not only the bytes.
	if err := unix.Fsync(dfd); err != nil {
		return wrap(&os.PathError{Op: "fsync", Path: dir, Err: err})
	}
	return nil
}

// createTemp makes a fresh 0600 file in the directory. Its name starts with a
// dot and has no extension, so readers globbing "*.json" or "*.key" skip it.
func createTemp(dfd int, dir string) (string, *os.File, error) {
	var b [8]byte
	for range 8 {
		_, _ = rand.Read(b[:])
		name := ".tmp-" + hex.EncodeToString(b[:])
		fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", nil, &os.PathError{Op: "create", Path: filepath.Join(dir, name), Err: err}
		}
		f := os.NewFile(uintptr(fd), filepath.Join(dir, name))
		// The umask may have taken bits away; make the mode exactly 0600.
		if err := f.Chmod(0o600); err != nil {
			_ = f.Close()
			_ = unix.Unlinkat(dfd, name, 0)
			return "", nil, err
		}
		return name, f, nil
	}
	return "", nil, fmt.Errorf("no free temporary name in %s", dir)
}

func writeSync(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// RemoveIfSame removes path only if it is still the file fi describes (same
// device and inode). A path already gone is not an error; a path now holding
// another file is ErrChanged and is left alone.
//
// The kernel reuses a freed inode number at once, so the comparison is exact
// only while the original is still open or linked somewhere: remove before
// closing. And the check and the unlink are two steps, so a same-user process
// can still race between them.
func RemoveIfSame(path string, fi os.FileInfo) error {
	if fi == nil {
		return pathErr("remove", path, errors.New("no file info to compare"))
	}
	cur, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return pathErr("remove", path, err)
	}
	if !os.SameFile(fi, cur) {
		return pathErr("remove", path, ErrChanged)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return pathErr("remove", path, err)
	}
	return nil
}

// OpenPrivate opens (or creates, with perm) a file that must be a regular
// file of ours, never through a symlink, and tightens its mode to exactly
// 0600. Its signature is os.OpenFile's, for libraries that take an opener
// (a database that opens its own file).
func OpenPrivate(name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, pathErr("open", name, ErrSymlink)
		}
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		err = pathErr("open", name, ErrNotRegular)
	case int(st.Uid) != os.Geteuid():
		err = pathErr("open", name, fmt.Errorf("%w (owner uid %d)", ErrNotOwner, st.Uid))
	case st.Mode&0o777 != 0o600:
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// CheckFile says whether path may be opened as a private file: nil when
// it is absent or a regular file, ErrSymlink or ErrNotRegular (with the
// path) otherwise. OpenPrivate is what makes opening it safe; this names
// the problem first.
func CheckFile(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s: %w", path, ErrSymlink)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	return nil
}
