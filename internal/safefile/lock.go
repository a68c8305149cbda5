package safefile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// TryLock takes an exclusive lock on the lock file at path (created 0600,
// never through a symlink) without waiting: ErrLocked means another
// process holds it. The lock lasts until unlock or the process ends.
func TryLock(path string) (unlock func(), err error) {
	return lock(path, unix.LOCK_EX|unix.LOCK_NB)
}

// Lock is TryLock that waits for the lock.
func Lock(path string) (unlock func(), err error) {
	return lock(path, unix.LOCK_EX)
}

func lock(path string, how int) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, pathErr("lock", path, ErrSymlink)
		}
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, pathErr("lock", path, ErrLocked)
		}
		return nil, pathErr("lock", path, err)
	}
	return func() { f.Close() }, nil
}
