package safefile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"
)

// onlyEntries fails unless dir holds exactly these names: no temp files left.
func onlyEntries(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("directory holds %q, want %q", got, names)
	}
}

func TestWriteAtomic(t *testing.T) {
	t.Run("a new file is written whole with mode 0600 and no temp file left", func(t *testing.T) {
		old := syscall.Umask(0o277) // a umask that would strip our write bit
		defer syscall.Umask(old)
		dir := testutil.ShortTempDir(t)
		p := filepath.Join(dir, "r.json")
		if err := WriteAtomic(p, []byte(`{"pid":1}`)); err != nil {
			t.Fatal(err)
		}
		assertFile(t, p, `{"pid":1}`)
		onlyEntries(t, dir, "r.json")
	})

	t.Run("an existing file is replaced, by a new inode", func(t *testing.T) {
		p := filepath.Join(testutil.ShortTempDir(t), "r.json")
		if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		before, _ := os.Stat(p)
		if err := WriteAtomic(p, []byte("new")); err != nil {
			t.Fatal(err)
		}
		assertFile(t, p, "new")
		if after, _ := os.Stat(p); os.SameFile(before, after) {
			t.Error("the old inode was written in place, so a reader could see a part")
		}
	})

	refusals := []struct {
		name    string
		prepare func(t *testing.T, dir, path string)
		want    error
	}{
		{"a symlink at the path is refused and its target untouched", func(t *testing.T, dir, p string) {
			target := filepath.Join(dir, "target")
			if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, ErrSymlink},
		{"a directory at the path is refused", func(t *testing.T, _, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, ErrNotRegular},
		{"a directory open to others is refused", func(t *testing.T, dir, _ string) {
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}, ErrLooseMode},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			dir := testutil.ShortTempDir(t)
			p := filepath.Join(dir, "r.json")
			tt.prepare(t, dir, p)
			if err := WriteAtomic(p, []byte("x")); !errors.Is(err, tt.want) {
				t.Fatalf("WriteAtomic = %v, want %v", err, tt.want)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "target")); err == nil && string(b) != "keep" {
				t.Errorf("symlink target now holds %q", b)
			}
		})
	}

	t.Run("a symlinked directory is refused", func(t *testing.T) {
		dir := testutil.ShortTempDir(t)
		link := dir + "-link"
		if err := os.Symlink(dir, link); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(link)
		if err := WriteAtomic(filepath.Join(link, "r.json"), []byte("x")); !errors.Is(err, ErrSymlink) {
			t.Fatalf("WriteAtomic = %v, want ErrSymlink", err)
		}
		onlyEntries(t, dir)
	})
}

func assertFile(t *testing.T, p, want string) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want a regular 0600 file", p, fi.Mode())
	}
	if b, _ := os.ReadFile(p); string(b) != want {
		t.Errorf("%s holds %q, want %q", p, b, want)
	}
}

func TestCreateExclusive(t *testing.T) {
	t.Run("a new file is created 0600", func(t *testing.T) {
		dir := testutil.ShortTempDir(t)
		p := filepath.Join(dir, "1.key")
		if err := CreateExclusive(p, []byte("mine")); err != nil {
			t.Fatal(err)
		}
		assertFile(t, p, "mine")
		onlyEntries(t, dir, "1.key")
	})

	existing := []struct {
		name    string
		prepare func(t *testing.T, p string)
	}{
		{"another process's file is never overwritten", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte("theirs"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a dangling symlink is not replaced", func(t *testing.T, p string) {
			if err := os.Symlink(p+".nowhere", p); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range existing {
		t.Run(tt.name, func(t *testing.T) {
			dir := testutil.ShortTempDir(t)
			p := filepath.Join(dir, "1.key")
			tt.prepare(t, p)
			before, _ := os.Lstat(p)
			if err := CreateExclusive(p, []byte("mine")); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("CreateExclusive = %v, want fs.ErrExist", err)
			}
			if after, err := os.Lstat(p); err != nil || !os.SameFile(before, after) {
				t.Errorf("the existing entry was replaced (%v)", err)
			}
			onlyEntries(t, dir, "1.key")
		})
	}

	t.Run("of many racing creators exactly one wins", func(t *testing.T) {
		dir := testutil.ShortTempDir(t)
		p := filepath.Join(dir, "race")
		const n = 16
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins []int
		)
		for i := range n {
			wg.Go(func() {
				err := CreateExclusive(p, []byte{byte('a' + i)})
				if err == nil {
					mu.Lock()
					wins = append(wins, i)
					mu.Unlock()
				} else if !errors.Is(err, fs.ErrExist) {
					t.Errorf("creator %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if len(wins) != 1 {
			t.Fatalf("%d creators won, want exactly 1", len(wins))
		}
		assertFile(t, p, string(rune('a'+wins[0])))
		onlyEntries(t, dir, "race")
	})
}

func TestEnsureDir(t *testing.T) {
	t.Run("missing directories are created 0700", func(t *testing.T) {
		old := syscall.Umask(0)
		defer syscall.Umask(old)
		p := filepath.Join(testutil.ShortTempDir(t), "a", "b")
		if err := EnsureDir(p); err != nil {
			t.Fatal(err)
		}
		assertMode(t, p, 0o700)
	})

	t.Run("an existing directory of ours with loose bits is tightened to 0700", func(t *testing.T) {
		p := filepath.Join(testutil.ShortTempDir(t), "loose")
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o775); err != nil {
			t.Fatal(err)
		}
		if err := CheckDir(p); !errors.Is(err, ErrLooseMode) {
			t.Errorf("CheckDir before = %v, want ErrLooseMode", err)
		}
		assertMode(t, p, 0o775) // CheckDir changes nothing
		if err := EnsureDir(p); err != nil {
			t.Fatal(err)
		}
		assertMode(t, p, 0o700)
		if err := CheckDir(p); err != nil {
			t.Errorf("CheckDir after = %v", err)
		}
	})

	t.Run("a symlink to a good directory is rejected and its target untouched", func(t *testing.T) {
		base := testutil.ShortTempDir(t)
		target := filepath.Join(base, "real")
		if err := os.Mkdir(target, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(target, 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(base, "link")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		for name, f := range map[string]func(string) error{"EnsureDir": EnsureDir, "CheckDir": CheckDir} {
			if err := f(link); !errors.Is(err, ErrSymlink) {
				t.Errorf("%s = %v, want ErrSymlink", name, err)
			}
		}
		assertMode(t, target, 0o755)
	})

	t.Run("a file where the directory should be is rejected", func(t *testing.T) {
		p := filepath.Join(testutil.ShortTempDir(t), "file")
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := EnsureDir(p); err == nil {
			t.Error("EnsureDir over a file returned nil")
		}
		if err := CheckDir(p); !errors.Is(err, ErrNotDir) {
			t.Errorf("CheckDir = %v, want ErrNotDir", err)
		}
	})

	t.Run("a directory owned by another user is rejected, not chmodded", func(t *testing.T) {
		p := "/" // root's: not ours unless we are root
		if os.Geteuid() == 0 {
			p = filepath.Join(testutil.ShortTempDir(t), "theirs")
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := os.Stat(p)
		if err := EnsureDir(p); !errors.Is(err, ErrNotOwner) {
			t.Errorf("EnsureDir = %v, want ErrNotOwner", err)
		}
		if err := CheckDir(p); !errors.Is(err, ErrNotOwner) {
			t.Errorf("CheckDir = %v, want ErrNotOwner", err)
		}
		if after, _ := os.Stat(p); after.Mode() != before.Mode() {
			t.Errorf("mode changed from %v to %v", before.Mode(), after.Mode())
		}
	})

	t.Run("CheckDir does not create a missing directory", func(t *testing.T) {
		p := filepath.Join(testutil.ShortTempDir(t), "missing")
		if err := CheckDir(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("CheckDir = %v, want fs.ErrNotExist", err)
		}
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Error("CheckDir created the directory")
		}
	})
}

func assertMode(t *testing.T, p string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != want {
		t.Errorf("%s: mode %v, want a directory %v", p, fi.Mode(), want)
	}
}

func TestReadCapped(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte("k"), n), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	under, exact, over := write("under", 10), write("exact", 16), write("over", 17)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(under, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		path    string
		wantLen int
		wantErr error
	}{
		{"a file under the cap is read whole", under, 10, nil},
		{"a file of exactly the cap is read whole", exact, 16, nil},
		{"a file one byte over the cap is refused", over, 0, ErrTooLarge},
		{"a symlink is refused", link, 0, ErrSymlink},
		{"a FIFO is refused without waiting for a writer", fifo, 0, ErrNotRegular},
		{"a directory is refused", dir, 0, ErrNotRegular},
		{"a missing file is fs.ErrNotExist", filepath.Join(dir, "none"), 0, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ReadCapped(tt.path, 16)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("ReadCapped = %v, want %v", err, tt.wantErr)
			}
			if len(b) != tt.wantLen {
				t.Errorf("read %d bytes, want %d", len(b), tt.wantLen)
			}
		})
	}

	t.Run("a /proc file that reports size 0 is read and capped by its content", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("no /proc here")
		}
		if b, err := ReadCapped("/proc/self/stat", 1<<16); err != nil || len(b) == 0 {
			t.Errorf("ReadCapped(/proc/self/stat) = %d bytes, %v", len(b), err)
		}
		if _, err := ReadCapped("/proc/self/stat", 8); !errors.Is(err, ErrTooLarge) {
			t.Errorf("ReadCapped(/proc/self/stat, 8) = %v, want ErrTooLarge", err)
		}
	})
}

func TestRemoveIfSame(t *testing.T) {
	setup := func(t *testing.T) (string, os.FileInfo) {
		p := filepath.Join(testutil.ShortTempDir(t), "f")
		if err := os.WriteFile(p, []byte("1"), 0o600); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return p, fi
	}
	t.Run("the same file is removed", func(t *testing.T) {
		p, fi := setup(t)
		if err := RemoveIfSame(p, fi); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("file still there: %v", err)
		}
	})
	t.Run("a file put in its place is kept", func(t *testing.T) {
		p, fi := setup(t)
		// Hold the original open, as a caller must: a freed inode number
		// is reused at once and would look the same.
		orig, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer orig.Close()
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("2"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := RemoveIfSame(p, fi); !errors.Is(err, ErrChanged) {
			t.Errorf("RemoveIfSame = %v, want ErrChanged", err)
		}
		if b, _ := os.ReadFile(p); string(b) != "2" {
			t.Errorf("successor holds %q", b)
		}
	})
	t.Run("a file already gone is not an error", func(t *testing.T) {
		p, fi := setup(t)
		_ = os.Remove(p)
		if err := RemoveIfSame(p, fi); err != nil {
			t.Errorf("RemoveIfSame = %v", err)
		}
	})
}
