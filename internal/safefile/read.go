package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// ReadCapped reads a regular file that is not a symlink, failing with
// ErrTooLarge if it holds more than max bytes. A FIFO at path is refused
// without blocking.
func ReadCapped(path string, max int64) ([]byte, error) {
	f, _, err := openRegular(path, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f, path, max)
}

// ReadSecret reads a file holding a secret (a token, a key, credentials):
// a regular file, not a symlink, with no permission bits for group or
// others (a *ModeError otherwise), at most max bytes. When prev describes
// the same file, unchanged in size and mtime, it returns nil bytes and
// prev: the caller's parse of it is still good.
func ReadSecret(path string, max int64, prev fs.FileInfo) ([]byte, fs.FileInfo, error) {
	// Lstat is cheap and catches a chmod or a symlink even when the content
	// is unchanged; O_NOFOLLOW and Fstat then check the file really opened.
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, nil, err
	}
	if err := checkSecret(fi); err != nil {
		return nil, nil, pathErr("read", path, err)
	}
	if prev != nil && os.SameFile(prev, fi) && prev.Size() == fi.Size() && prev.ModTime().Equal(fi.ModTime()) {
		return nil, prev, nil
	}
	f, fi, err := openRegular(path, true)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if err := checkSecret(fi); err != nil {
		return nil, nil, pathErr("read", path, err)
	}
	b, err := readCapped(f, path, max)
	if err != nil {
		return nil, nil, err
	}
	return b, fi, nil
}

func checkSecret(fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return ErrSymlink
	case !fi.Mode().IsRegular():
		return ErrNotRegular
	case fi.Mode().Perm()&0o077 != 0:
		return &ModeError{Mode: fi.Mode(), Mask: 0o077}
	}
	return nil
}

// ReadOwnerWritable reads a file others may read but only its owner may
// write, such as a configuration that can name commands to run: a regular
// file (reached through a symlink too: that is how Kubernetes mounts a
// ConfigMap), with no write bit for group or others, at most max bytes.
func ReadOwnerWritable(path string, max int64) ([]byte, error) {
	f, fi, err := openRegular(path, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, pathErr("read", path, &ModeError{Mode: fi.Mode(), Mask: 0o022})
	}
	return readCapped(f, path, max)
}

// openRegular opens path for reading and checks, on the descriptor, that it
// is a regular file. O_NONBLOCK keeps open(2) on a FIFO from waiting for a
// writer; it is cleared again for the read.
func openRegular(path string, noFollow bool) (*os.File, fs.FileInfo, error) {
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC
	if noFollow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(path, flags, 0)
	if err != nil {
		if noFollow && errors.Is(err, unix.ELOOP) {
			return nil, nil, pathErr("read", path, ErrSymlink)
		}
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, pathErr("read", path, ErrNotRegular)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		f.Close()
		return nil, nil, &os.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return f, fi, nil
}

// readCapped reads f whole unless it holds more than max bytes. The file
// may grow after fstat (and /proc files report size 0), so it reads one
// byte past the cap to tell "exactly max" from "more".
func readCapped(f *os.File, path string, max int64) ([]byte, error) {
	if max < 0 {
		return nil, pathErr("read", path, fmt.Errorf("negative cap %d", max))
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		return nil, pathErr("read", path, fmt.Errorf("%w (%d bytes, more than %d)", ErrTooLarge, fi.Size(), max))
	}
	limit := max
	if limit < math.MaxInt64 {
		limit++
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, pathErr("read", path, err)
	}
	if int64(len(data)) > max {
		return nil, pathErr("read", path, fmt.Errorf("%w (more than %d bytes)", ErrTooLarge, max))
	}
	return data, nil
}
