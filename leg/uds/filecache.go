package uds

import (
	"io/fs"
	"os"
	"time"

	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/internal/safefile"
)

// maxCachedFiles bounds the files whose parse a FileCache remembers.
const maxCachedFiles = 1024

// FileCache remembers the parse of registry files a send reads (key
// files, entries, records), keyed by path and stamped with what lstat said
// of the file when it was read. A send lstats the file (one syscall) and
// reuses the parse while the stamp is the same; any change (an atomic
// rewrite's new inode, a size, a mode, an mtime) reads the file again,
// through the same checks as an uncached read. Safe for concurrent use.
type FileCache[T any] struct {
	max   int64
	parse func([]byte) (T, error)
	m     *bounded.Map[string, cachedFile[T]]
}

type cachedFile[T any] struct {
	stamp fileStamp
	val   T
}

// How old a file's mtime must be before what was read of it is kept: file
// times tick coarsely, so a change within the same tick as the time read
// would leave it where it was. A filesystem that keeps fractions of a
// second ticks with the kernel's clock (a jiffy, 10 ms at most); one that
// keeps whole seconds (a time with no fraction) ticks in seconds, or two.
const (
	racyWindow     = 2 * time.Second
	fineRacyWindow = 100 * time.Millisecond
)

// settled reports whether a change to a file from now on moves its mtime
// past t, the mtime it has now.
func settled(t time.Time) bool {
	window := racyWindow
	if t.Nanosecond() != 0 {
		window = fineRacyWindow
	}
	return time.Since(t) > window
}

// fileStamp is what identifies one version of a file: the same file
// (device and inode), unchanged in size, mode and mtime.
type fileStamp struct{ fi fs.FileInfo }

func (s fileStamp) same(o fileStamp) bool {
	return s.fi != nil && o.fi != nil && os.SameFile(s.fi, o.fi) && s.fi.Size() == o.fi.Size() &&
		s.fi.Mode() == o.fi.Mode() && s.fi.ModTime().Equal(o.fi.ModTime())
}

// NewFileCache reads files of at most max bytes and parses them with parse.
func NewFileCache[T any](max int64, parse func([]byte) (T, error)) *FileCache[T] {
	return &FileCache[T]{max: max, parse: parse, m: bounded.NewMap[string, cachedFile[T]](maxCachedFiles)}
}

// stampOf is the stamp of the regular file at path, false for anything
// else (missing, a symlink, a directory): those take the uncached read,
// which says why.
func stampOf(path string) (fileStamp, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return fileStamp{}, false
	}
	return fileStamp{fi}, true
}

// Peek is the parse Get last kept for path, without looking at the file:
// false when none is kept.
func (c *FileCache[T]) Peek(path string) (T, bool) {
	e, ok := c.m.Get(path)
	return e.val, ok
}

// Get is the parse of the file at path as safefile.ReadCapped reads it:
// the cached one when the file is unchanged since.
func (c *FileCache[T]) Get(path string) (T, error) {
	stamp, ok := stampOf(path)
	if ok {
		if e, hit := c.m.Get(path); hit && e.stamp.same(stamp) {
			return e.val, nil
		}
	} else {
		c.m.Delete(path)
	}
	var zero T
	b, err := safefile.ReadCapped(path, c.max)
	if err != nil {
		return zero, err
	}
	v, err := c.parse(b)
	if err != nil {
		c.m.Delete(path)
		return zero, err
	}
	// The stamp was taken before the read: a change in between leaves a
	// stamp that no longer matches, so the next send reads again. Unless
	// the mtime is recent: file times tick coarsely (a jiffy), so a
	// rewrite of the same size in the same tick would keep the stamp; such
	// a file is read again until its mtime is well past.
	if ok && settled(stamp.fi.ModTime()) {
		c.m.Put(path, cachedFile[T]{stamp: stamp, val: v})
	}
	return v, nil
}
