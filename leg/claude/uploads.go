package claude

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/message"
)

// Limits of the uploads directory, the defaults of serve's --uploads-quota
// and --uploads-max-age. A sender can name one 30 MiB spool file sixteen
// times a message; the store keeps each distinct content once, never more
// than the quota, and forgets what no message has named for the max age.
const (
	DefaultUploadsQuota  = 1 << 30
	DefaultUploadsMaxAge = 24 * time.Hour
	// uploadsGCEvery is how often a running peer collects old uploads.
	uploadsGCEvery = 10 * time.Minute
)

// uploads keeps inbound attachments: one file per distinct content, named
// by its sha256, so sixteen descriptors to one file cost one copy. Files
// of the older layout (one directory a message) are collected like the
// rest.
type uploads struct {
	dir    string
	quota  int64
	maxAge time.Duration
	clock  clock.Clock

	mu   sync.Mutex
	used int64 // bytes kept: the last collection's count, plus what was added since
}

func newUploads(dir string, quota int64, maxAge time.Duration, c clock.Clock) *uploads {
	if quota <= 0 {
		quota = DefaultUploadsQuota
	}
	if maxAge <= 0 {
		maxAge = DefaultUploadsMaxAge
	}
	return &uploads{dir: dir, quota: quota, maxAge: maxAge, clock: c}
}

// store checks the spool file a names against its descriptor (size and
// sha256, read as a stream) and returns where its content is kept. A
// content already kept is only checked and its time refreshed; a new one
// is copied unless it would take the directory past the quota.
func (u *uploads) store(a message.Attachment) (string, message.AttachmentRefusal, error) {
	sum := strings.ToLower(a.SHA256)
	dst := filepath.Join(u.dir, sum)
	if fi, err := os.Lstat(dst); err == nil && fi.Mode().IsRegular() && fi.Size() == a.FileSize {
		if err := verifySpooled(io.Discard, a); err != nil {
			return "", message.AttachmentInvalid, err
		}
		now := u.clock.Now()
		_ = os.Chtimes(dst, now, now) // kept for max age from its last use
		return dst, "", nil
	}
	if !u.reserve(a.FileSize) {
		return "", message.AttachmentOverQuota, fmt.Errorf("%d bytes would take %s past its %d-byte quota", a.FileSize, u.dir, u.quota)
	}
	fresh, refusal, err := u.copyIn(a, dst)
	if !fresh {
		u.release(a.FileSize) // failed, or another writer kept the same content first
	}
	if err != nil {
		return "", refusal, err
	}
	return dst, "", nil
}

// copyIn copies the spool file to dst through a temporary file, checking
// it on the way; fresh is whether dst is a new file this call made.
func (u *uploads) copyIn(a message.Attachment, dst string) (fresh bool, _ message.AttachmentRefusal, _ error) {
	if err := safefile.EnsureDir(u.dir); err != nil {
		return false, message.AttachmentUnstored, err
	}
	tmp, err := os.CreateTemp(u.dir, ".tmp-")
	if err != nil {
		return false, message.AttachmentUnstored, err
	}
	defer os.Remove(tmp.Name())
	err = verifySpooled(tmp, a)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		return false, message.AttachmentUnstored, cerr
	}
	if err != nil {
		return false, message.AttachmentInvalid, err
	}
	// A link never replaces: a content kept meanwhile stays as it is.
	if err := os.Link(tmp.Name(), dst); err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, "", nil
		}
		return false, message.AttachmentUnstored, err
	}
	return true, "", nil
}

func (u *uploads) reserve(n int64) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.used+n > u.quota {
		return false
	}
	u.used += n
	return true
}

func (u *uploads) release(n int64) {
	u.mu.Lock()
	u.used -= n
	u.mu.Unlock()
}

// verifySpooled copies the spool file a names to w while hashing it, and
// fails unless it held exactly a.FileSize bytes with a.SHA256. The file is
// opened without following a symlink or waiting on a FIFO.
func verifySpooled(w io.Writer, a message.Attachment) error {
	fd, err := unix.Open(a.Path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: a.Path, Err: err}
	}
	f := os.NewFile(uintptr(fd), a.Path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	if fi.Size() != a.FileSize {
		return fmt.Errorf("size %d, descriptor says %d", fi.Size(), a.FileSize)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(f, a.FileSize+1))
	if err != nil {
		return err
	}
	if n != a.FileSize {
		return fmt.Errorf("size %d, descriptor says %d", n, a.FileSize)
	}
	if hex.EncodeToString(h.Sum(nil)) != strings.ToLower(a.SHA256) {
		return errors.New("sha256 does not match")
	}
	return nil
}

// keptFile is one file under the uploads directory.
type keptFile struct {
	path string
	size int64
	mod  time.Time
}

// scan lists the regular files in dir and in its directories one level
// down (the older layout), with the bytes they hold. Links are left alone.
func scanUploads(dir string) ([]keptFile, int64) {
	var files []keptFile
	var total int64
	add := func(d string, e os.DirEntry) {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			return
		}
		files = append(files, keptFile{path: filepath.Join(d, e.Name()), size: fi.Size(), mod: fi.ModTime()})
		total += fi.Size()
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			sub := filepath.Join(dir, e.Name())
			inner, _ := os.ReadDir(sub)
			for _, ie := range inner {
				add(sub, ie)
			}
			continue
		}
		add(dir, e)
	}
	return files, total
}

// collect removes files older than the max age, then the oldest until the
// directory is within its quota, and empty directories of the older
// layout; it recounts the bytes kept. Errors only leave a file for later.
func (u *uploads) collect() (removed int, freed int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	files, total := scanUploads(u.dir)
	sort.Slice(files, func(i, j int) bool { return files[i].mod.Before(files[j].mod) })
	cutoff := u.clock.Now().Add(-u.maxAge)
	for _, f := range files {
		if !f.mod.Before(cutoff) && total <= u.quota {
			break
		}
		if os.Remove(f.path) == nil {
			removed++
			freed += f.size
			total -= f.size
		}
	}
	ents, _ := os.ReadDir(u.dir)
	for _, e := range ents {
		if e.IsDir() {
			_ = os.Remove(filepath.Join(u.dir, e.Name())) // only when empty
		}
	}
	u.used = total
	return removed, freed
}

// run collects every uploadsGCEvery until ctx ends.
func (u *uploads) run(ctx context.Context, log *slog.Logger) {
	for clock.Sleep(ctx, u.clock, uploadsGCEvery) == nil {
		if n, freed := u.collect(); n > 0 {
			log.Info("removed old uploads", "count", n, "bytes", freed, "dir", u.dir)
		}
	}
}
