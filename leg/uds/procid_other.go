//go:build !linux

package uds

import "time"

// Process identity reads /proc, so outside Linux every call is ErrUnsupported.

// StartTicks is Linux only.
func StartTicks(int) (uint64, error) { return 0, ErrUnsupported }

// StartTime is Linux only.
func StartTime(int) (time.Time, error) { return time.Time{}, ErrUnsupported }

// BootID is Linux only.
func BootID() (string, error) { return "", ErrUnsupported }

// PidNamespace is Linux only.
func PidNamespace(int) (uint64, error) { return 0, ErrUnsupported }

// MachineID is Linux only.
func MachineID() (string, error) { return "", ErrUnsupported }

// Lstart is Linux only.
func Lstart(int) (string, error) { return "", ErrUnsupported }

// ProcState is Linux only.
func ProcState(int) (byte, int, error) { return 0, 0, ErrUnsupported }

// InnermostPID is Linux only.
func InnermostPID(int) (int, error) { return 0, ErrUnsupported }

// LiveStart is Linux only.
func LiveStart(int) (uint64, bool) { return 0, false }
