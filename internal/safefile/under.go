package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenUnder opens the regular file rel names beneath dir, for reading,
// following no symlink on the way: each directory of rel is opened with
// O_NOFOLLOW through the one before it, so no component can lead out of
// dir, whatever is renamed meanwhile. dir itself may be reached through
// symlinks (it is the caller's to choose). rel must be relative, with no
// "." or ".." component (ErrOutside otherwise); a symlink anywhere in it
// is ErrSymlink, anything but a regular file at its end ErrNotRegular. A
// FIFO is refused without blocking.
func OpenUnder(dir, rel string) (*os.File, error) {
	path := filepath.Join(dir, rel)
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, pathErr("open", path, ErrOutside)
		}
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	for _, p := range parts[:len(parts)-1] {
		next, err := unix.Openat(dfd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			err = classifyAt(dfd, p, path, err)
			unix.Close(dfd)
			return nil, err
		}
		unix.Close(dfd)
		dfd = next
	}
	last := parts[len(parts)-1]
	fd, err := unix.Openat(dfd, last, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		err = classifyAt(dfd, last, path, err)
		unix.Close(dfd)
		return nil, err
	}
	unix.Close(dfd)
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = pathErr("open", path, ErrNotRegular)
	}
	if err == nil {
		if serr := unix.SetNonblock(fd, false); serr != nil {
			err = &os.PathError{Op: "fcntl", Path: path, Err: serr}
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// classifyAt names what an O_NOFOLLOW open of name in dfd refused: a
// symlink is ErrSymlink whether the kernel said ELOOP or ENOTDIR.
func classifyAt(dfd int, name, path string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFLNK:
				return pathErr("open", path, ErrSymlink)
			case unix.S_IFDIR:
			default:
				return pathErr("open", path, ErrNotDir)
			}
		}
	}
	return &os.PathError{Op: "open", Path: path, Err: err}
}
