//go:build !linux

package claude

import "errors"

// socketOwnedBy cannot be proven off Linux; receipts are then not sent.
func socketOwnedBy(path string, pid int) (bool, error) {
	return false, errors.New("return-address verification needs Linux /proc")
}
