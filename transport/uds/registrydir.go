package uds

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync/atomic"

	"github.com/sessiongateway/gateway/internal/safefile"
)

// ErrUnsafeRegistry: the session registry directory is writable by group or
// others, or not ours, so none of its records is believed: nothing in it is
// listed or dialed until the user repairs it (chmod 700, chown).
var ErrUnsafeRegistry = errors.New("session registry directory is unsafe")

// RegistryDir is a session registry directory that other programs of this
// user write in too. Its mode and owner can change while we run, so it is
// checked before each read, not only at start.
type RegistryDir struct {
	Path    string
	Log     *slog.Logger
	refused atomic.Bool
}

// Check reports whether the directory may be read now: nil when it is
// safe or does not exist (no records), else an error matching
// ErrUnsafeRegistry that says why. The first refusal after a good check is
// logged as a warning, and the repair after a refusal as information.
func (d *RegistryDir) Check() error {
	err := safefile.CheckSharedDir(d.Path)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		if d.refused.Swap(false) && d.Log != nil {
			d.Log.Info("session registry directory is safe again", "dir", d.Path)
		}
		return nil
	}
	if !d.refused.Swap(true) && d.Log != nil {
		d.Log.Warn("session registry directory refused: its records are neither listed nor dialed until it is ours alone (chmod 700, and chown if another user owns it)",
			"dir", d.Path, "err", err)
	}
	return fmt.Errorf("%w: %w", ErrUnsafeRegistry, err)
}
