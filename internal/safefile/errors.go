package safefile

import (
	"errors"
	"fmt"
	"io/fs"
)

// Sentinel errors, matched with errors.Is. The returned errors wrap them in
// an *fs.PathError naming the operation and the path.
var (
	// ErrSymlink: the path is a symbolic link, which we never follow.
	ErrSymlink = errors.New("is a symlink")
	// ErrNotDir: the path is not a directory.
	ErrNotDir = errors.New("not a directory")
	// ErrNotOwner: the file or directory belongs to another user.
	ErrNotOwner = errors.New("not owned by this user")
	// ErrLooseMode: the file or directory grants group or other
	// permissions; a *ModeError says which.
	ErrLooseMode = errors.New("readable or writable by group or others")
	// ErrNotRegular: the path is not a regular file.
	ErrNotRegular = errors.New("is not a regular file")
	// ErrTooLarge: the file is larger than the caller's cap.
	ErrTooLarge = errors.New("is too large")
	// ErrChanged: the file at the path is no longer the one we were given.
	ErrChanged = errors.New("file was replaced")
	// ErrLocked: another process holds the lock.
	ErrLocked = errors.New("locked by another process")
	// ErrOutside: the path would lead out of the directory it must stay in.
	ErrOutside = errors.New("leads outside its directory")
)

// ModeError is a file or directory whose permission bits let group or
// others in. It matches ErrLooseMode.
type ModeError struct {
	Mode fs.FileMode // the file's mode (ModeDir set for a directory)
	Mask fs.FileMode // the bits refused: 0o077, or 0o022 where others may read
}

func (e *ModeError) Error() string {
	if e.Mask&0o044 == 0 {
		return fmt.Sprintf("has mode %#o, writable by group or others; run chmod go-w", e.Mode.Perm())
	}
	fix := "600"
	if e.Mode.IsDir() {
		fix = "700"
	}
	return fmt.Sprintf("has mode %#o, %v; run chmod %s", e.Mode.Perm(), ErrLooseMode, fix)
}

func (e *ModeError) Is(target error) bool { return target == ErrLooseMode }

func pathErr(op, path string, err error) error { return &fs.PathError{Op: op, Path: path, Err: err} }
