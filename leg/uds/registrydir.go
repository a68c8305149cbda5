package uds

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync/atomic"
	"syscall"

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
	good    atomic.Pointer[dirStamp] // what lstat said at the last check that passed
	listed  atomic.Pointer[listing]  // the entries as last read, while they may be reused
	gens    atomic.Uint64            // listings kept so far
}

// listing is the directory's entries as one read found them, with what
// lstat said of the directory just before that read.
type listing struct {
	stamp dirStamp
	ents  []fs.DirEntry
	gen   uint64
}

// dirStamp is what a check depends on: the directory itself (not a
// symlink), its mode and its owner.
type dirStamp struct {
	fi  fs.FileInfo
	uid uint32
}

func lstatDir(path string) (dirStamp, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return dirStamp{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return dirStamp{}, false
	}
	return dirStamp{fi: fi, uid: st.Uid}, true
}

func (d dirStamp) same(o *dirStamp) bool {
	return o != nil && os.SameFile(d.fi, o.fi) && d.fi.Mode() == o.fi.Mode() && d.uid == o.uid
}

// unchanged reports whether the directory's entries are still those listed
// when it had stamp o: the same directory, with the same mode, owner, size
// and mtime (creating, removing or renaming an entry moves the mtime).
func (d dirStamp) unchanged(o dirStamp) bool {
	return d.same(&o) && d.fi.Size() == o.fi.Size() && d.fi.ModTime().Equal(o.fi.ModTime())
}

// Check reports whether the directory may be read now: nil when it is
// safe or does not exist (no records), else an error matching
// ErrUnsafeRegistry that says why. The first refusal after a good check is
// logged as a warning, and the repair after a refusal as information.
func (d *RegistryDir) Check() error {
	stamp, isDir := lstatDir(d.Path)
	return d.check(stamp, isDir)
}

// List is the directory's entries once Check passes (none when it does
// not exist). While the directory is unchanged since the last read (see
// unchanged), that read's entries are returned again: one lstat per call,
// not an open and a read of the directory. The caller must not modify
// them. What an entry names may have changed in place; read it to know.
//
// gen tells kept listings apart: every call that returns the same kept
// listing returns the same gen, and no entry was created, removed or
// renamed in between; 0 is a listing not kept (the next call reads again).
func (d *RegistryDir) List() (ents []fs.DirEntry, gen uint64, err error) {
	stamp, isDir := lstatDir(d.Path)
	if err := d.check(stamp, isDir); err != nil {
		return nil, 0, err
	}
	if l := d.listed.Load(); isDir && l != nil && stamp.unchanged(l.stamp) {
		return l.ents, l.gen, nil
	}
	ents, err = os.ReadDir(d.Path)
	if errors.Is(err, fs.ErrNotExist) {
		d.listed.Store(nil)
		return nil, 0, nil
	}
	if err != nil {
		d.listed.Store(nil)
		return nil, 0, err
	}
	// The stamp was taken before the read: a change in between moves the
	// mtime past it, and the next call reads again. Unless the mtime is
	// recent: file times tick coarsely, and a change within the same tick
	// would leave it where it was; such a listing is not kept (as a
	// FileCache keeps no recent file).
	if isDir && settled(stamp.fi.ModTime()) {
		gen = d.gens.Add(1)
		d.listed.Store(&listing{stamp: stamp, ents: ents, gen: gen})
	} else {
		d.listed.Store(nil)
	}
	return ents, gen, nil
}

// check is Check of what lstat just said of the directory.
func (d *RegistryDir) check(stamp dirStamp, isDir bool) error {
	// The same directory with the same mode and owner as at the last
	// check that passed passes again: one lstat, not an open.
	if isDir && stamp.same(d.good.Load()) {
		return nil
	}
	err := safefile.CheckSharedDir(d.Path)
	if err == nil && isDir {
		d.good.Store(&stamp)
	} else {
		d.good.Store(nil)
	}
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
