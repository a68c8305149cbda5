//go:build !linux && !darwin

package uds

func peerCred(int) (Cred, error) { return Cred{}, ErrUnsupported }
