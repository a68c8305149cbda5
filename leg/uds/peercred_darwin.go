package uds

import "golang.org/x/sys/unix"

// On macOS the uid and groups come from LOCAL_PEERCRED and the pid from
// LOCAL_PEERPID; cr_groups[0] is the effective gid.
func peerCred(fd int) (Cred, error) {
	x, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return Cred{}, err
	}
	pid, err := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		return Cred{}, err
	}
	c := Cred{PID: pid, UID: int(x.Uid), GID: -1}
	if x.Ngroups > 0 {
		c.GID = int(x.Groups[0])
	}
	return c, nil
}
