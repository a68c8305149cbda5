package safefile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplace moves old to new within the directory unless new exists
// (EEXIST). Filesystems without RENAME_NOREPLACE fall back to link + unlink,
// which gives the same guarantee.
func renameNoReplace(dfd int, old, new string) error {
	err := unix.Renameat2(dfd, old, dfd, new, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return linkNoReplace(dfd, old, new)
	}
	return err
}
