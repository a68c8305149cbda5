//go:build !linux

package uds

// Process identity reads /proc; other platforms get ErrUnsupported.

func StartTicks(int) (uint64, error)   { return 0, ErrUnsupported }
func BootID() (string, error)          { return "", ErrUnsupported }
func PidNamespace(int) (uint64, error) { return 0, ErrUnsupported }
func MachineID() (string, error)       { return "", ErrUnsupported }
func Lstart(int) (string, error)       { return "", ErrUnsupported }
