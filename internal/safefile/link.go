package safefile

import "golang.org/x/sys/unix"

// linkNoReplace gives new the inode of old (link fails with EEXIST if new
// exists) and then drops the old name.
func linkNoReplace(dfd int, old, new string) error {
	if err := unix.Linkat(dfd, old, dfd, new, 0); err != nil {
		return err
	}
	_ = unix.Unlinkat(dfd, old, 0)
	return nil
}
