//go:build !unix

package wsclient

// rawWaits says Wait may wait on a plain socket itself: not here, where
// Wait reads the connection as any other read does.
const rawWaits = false

func readFD(uintptr, []byte) (int, error) { panic("unreachable") }

func wouldBlock(error) bool { return false }
