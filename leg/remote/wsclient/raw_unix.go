//go:build unix

package wsclient

import (
	"errors"
	"syscall"
)

// rawWaits says Wait may wait on a plain socket itself.
const rawWaits = true

// readFD reads a non-blocking socket, retrying when interrupted.
func readFD(fd uintptr, p []byte) (int, error) {
	for {
		n, err := syscall.Read(int(fd), p)
		if !errors.Is(err, syscall.EINTR) {
			return n, err
		}
	}
}

func wouldBlock(err error) bool { return errors.Is(err, syscall.EAGAIN) }
