package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
)

func TestLock(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	p := filepath.Join(dir, "x.lock")
	unlock, err := TryLock(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a second holder is refused with ErrLocked", func(t *testing.T) {
		if _, err := TryLock(p); !errors.Is(err, ErrLocked) {
			t.Fatalf("TryLock = %v, want ErrLocked", err)
		}
	})
	t.Run("the lock file is 0600", func(t *testing.T) {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("stat = %v, %v", fi, err)
		}
	})
	t.Run("Lock waits for the holder to let go", func(t *testing.T) {
		got := make(chan func(), 1)
		go func() {
			u, err := Lock(p)
			if err != nil {
				t.Error(err)
			}
			got <- u
		}()
		select {
		case <-got:
			t.Fatal("Lock returned while the lock was held")
		case <-time.After(50 * time.Millisecond):
		}
		unlock()
		select {
		case u := <-got:
			u()
		case <-time.After(5 * time.Second):
			t.Fatal("Lock did not return after unlock")
		}
	})
	t.Run("a symlink at the path is refused", func(t *testing.T) {
		link := filepath.Join(dir, "l.lock")
		if err := os.Symlink(filepath.Join(dir, "elsewhere"), link); err != nil {
			t.Fatal(err)
		}
		if _, err := TryLock(link); !errors.Is(err, ErrSymlink) {
			t.Fatalf("TryLock = %v, want ErrSymlink", err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
			t.Fatal("the lock was created through the symlink")
		}
	})
}

func TestOpenPrivate(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	t.Run("an existing file is tightened to 0600", func(t *testing.T) {
		p := filepath.Join(dir, "db")
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := OpenPrivate(p, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
		}
	})
	t.Run("a symlink is refused", func(t *testing.T) {
		link := filepath.Join(dir, "link")
		if err := os.Symlink(filepath.Join(dir, "target"), link); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenPrivate(link, os.O_RDWR|os.O_CREATE, 0o600); !errors.Is(err, ErrSymlink) {
			t.Fatalf("err = %v, want ErrSymlink", err)
		}
	})
	t.Run("a directory is refused", func(t *testing.T) {
		if _, err := OpenPrivate(dir, os.O_RDONLY, 0); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("err = %v, want ErrNotRegular", err)
		}
	})
}
