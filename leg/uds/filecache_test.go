package uds

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/safefile"
)

// countingCache parses a file's bytes as a string and counts the parses.
func countingCache(parses *int) *FileCache[string] {
	return NewFileCache(4096, func(b []byte) (string, error) {
		*parses++
		if len(b) == 0 {
			return "", errors.New("empty")
		}
		return string(b), nil
	})
}

// age sets path's mtime past the racy window, as a file written a while ago.
func age(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

func TestAFileCacheReadsAgainWhenTheFileChanges(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f")
	parses := 0
	c := countingCache(&parses)
	get := func(want string) {
		t.Helper()
		got, err := c.Get(path)
		if err != nil || got != want {
			t.Fatalf("get = %q, %v; want %q", got, err, want)
		}
	}
	if err := safefile.WriteAtomic(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	age(t, path)
	get("one")
	get("one")
	if parses != 1 {
		t.Fatalf("an unchanged file was parsed %d times, want once", parses)
	}

	// Rewritten atomically (a new inode), with the same size and mtime.
	if err := safefile.WriteAtomic(path, []byte("two")); err != nil {
		t.Fatal(err)
	}
	age(t, path)
	get("two")

	// Rewritten in place, same size, within the racy window: never kept.
	if err := os.WriteFile(path, []byte("333"), 0o600); err != nil {
		t.Fatal(err)
	}
	get("333")
	if err := os.WriteFile(path, []byte("444"), 0o600); err != nil {
		t.Fatal(err)
	}
	get("444")

	// Gone, then a symlink in its place: the uncached read says why.
	os.Remove(path)
	if _, err := c.Get(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a removed file: %v, want not exist", err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, path); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(path); !errors.Is(err, safefile.ErrSymlink) {
		t.Fatalf("a symlink: %v, want ErrSymlink", err)
	}
}

func TestAFileCacheKeepsNoParseThatFailed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	age(t, path)
	parses := 0
	c := countingCache(&parses)
	for range 2 {
		if _, err := c.Get(path); err == nil {
			t.Fatal("an empty file parsed")
		}
	}
	if parses != 2 {
		t.Fatalf("a bad file was parsed %d times, want every time", parses)
	}
}

func TestAFileTimeIsSettledOnceItsTickHasSurelyPassed(t *testing.T) {
	now := time.Now()
	whole := func(ago time.Duration) time.Time { return now.Add(-ago).Truncate(time.Second) }
	fine := func(ago time.Duration) time.Time {
		t := now.Add(-ago)
		if t.Nanosecond() == 0 {
			t = t.Add(-time.Nanosecond)
		}
		return t
	}
	tests := []struct {
		name string
		t    time.Time
		want bool
	}{
		{"a fine time of just now is not", fine(0), false},
		{"a fine time within the kernel's tick is not", fine(20 * time.Millisecond), false},
		{"a fine time well past a tick is", fine(time.Second), true},
		{"a whole-second time within two seconds is not (two-second filesystems)", whole(0), false},
		{"a whole-second time three seconds ago is", whole(3 * time.Second), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := settled(tt.t); got != tt.want {
				t.Fatalf("settled(%v) = %v, want %v", tt.t, got, tt.want)
			}
		})
	}
}
