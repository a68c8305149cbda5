package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"
)

func TestEnsureSharedDir(t *testing.T) {
	t.Run("a missing directory is created 0700", func(t *testing.T) {
		p := filepath.Join(testutil.ShortTempDir(t), "sessions")
		if err := EnsureSharedDir(p); err != nil {
			t.Fatal(err)
		}
		assertMode(t, p, 0o700)
	})
	t.Run("one others may only read is tightened", func(t *testing.T) {
		p := filepath.Join(testutil.ShortTempDir(t), "sessions")
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := CheckSharedDir(p); err != nil {
			t.Errorf("CheckSharedDir of a 0755 directory = %v, want nil", err)
		}
		if err := EnsureSharedDir(p); err != nil {
			t.Fatal(err)
		}
		assertMode(t, p, 0o700)
	})
	for _, mode := range []os.FileMode{0o777, 0o770, 0o702} {
		t.Run("one others may write is refused and left as it is: "+mode.String(), func(t *testing.T) {
			p := filepath.Join(testutil.ShortTempDir(t), "sessions")
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
			for name, f := range map[string]func(string) error{"EnsureSharedDir": EnsureSharedDir, "CheckSharedDir": CheckSharedDir} {
				var me *ModeError
				if err := f(p); !errors.As(err, &me) || !errors.Is(err, ErrLooseMode) {
					t.Errorf("%s = %v, want a ModeError", name, err)
				}
			}
			assertMode(t, p, mode)
		})
	}
	t.Run("one another user owns is refused", func(t *testing.T) {
		testutil.Need(t, os.Geteuid() == 0, "needs root to give a directory away")
		p := filepath.Join(testutil.ShortTempDir(t), "sessions")
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := CheckSharedDir(p); !errors.Is(err, ErrNotOwner) {
			t.Errorf("CheckSharedDir = %v, want ErrNotOwner", err)
		}
	})
	t.Run("a symlink is refused", func(t *testing.T) {
		d := testutil.ShortTempDir(t)
		p := filepath.Join(d, "link")
		if err := os.Symlink(d, p); err != nil {
			t.Fatal(err)
		}
		if err := CheckSharedDir(p); !errors.Is(err, ErrSymlink) {
			t.Errorf("CheckSharedDir = %v, want ErrSymlink", err)
		}
	})
}

func TestReplaceShared(t *testing.T) {
	// a shared directory, readable by others as ~/.claude often is
	dir := func(t *testing.T) string {
		d := testutil.ShortTempDir(t)
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	file := func(t *testing.T, d string, mode os.FileMode) string {
		p := filepath.Join(d, "settings.json")
		if err := os.WriteFile(p, []byte("old"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("a file keeps its mode and gets the new bytes", func(t *testing.T) {
		p := file(t, dir(t), 0o644)
		if err := ReplaceShared(p, []byte("new"), 0o600); err != nil {
			t.Fatal(err)
		}
		sharedFileIs(t, p, "new", 0o644)
	})
	t.Run("a new file gets the mode given", func(t *testing.T) {
		p := filepath.Join(dir(t), "settings.json")
		if err := ReplaceShared(p, []byte("new"), 0o640); err != nil {
			t.Fatal(err)
		}
		sharedFileIs(t, p, "new", 0o640)
	})
	t.Run("WriteShared leaves a file 0600 whatever it had", func(t *testing.T) {
		p := file(t, dir(t), 0o644)
		if err := WriteShared(p, []byte("copy")); err != nil {
			t.Fatal(err)
		}
		sharedFileIs(t, p, "copy", 0o600)
	})
	t.Run("a symlink is refused, and its target untouched", func(t *testing.T) {
		d := dir(t)
		target := file(t, d, 0o600)
		link := filepath.Join(d, "link.json")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if err := ReplaceShared(link, []byte("new"), 0o600); !errors.Is(err, ErrSymlink) {
			t.Fatalf("ReplaceShared through a symlink = %v, want ErrSymlink", err)
		}
		sharedFileIs(t, target, "old", 0o600)
	})
	t.Run("a directory others may write is refused", func(t *testing.T) {
		d := dir(t)
		p := file(t, d, 0o600)
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := ReplaceShared(p, []byte("new"), 0o600); !errors.Is(err, ErrLooseMode) {
			t.Fatalf("ReplaceShared in a 0777 directory = %v, want ErrLooseMode", err)
		}
		sharedFileIs(t, p, "old", 0o600)
	})
	t.Run("another user's file is refused", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("only root can give a file away")
		}
		p := file(t, dir(t), 0o644)
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := ReplaceShared(p, []byte("new"), 0o600); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("ReplaceShared of another user's file = %v, want ErrNotOwner", err)
		}
		sharedFileIs(t, p, "old", 0o644)
	})
}

func sharedFileIs(t *testing.T, p, body string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != body {
		t.Fatalf("%s holds %q (%v), want %q", p, b, err, body)
	}
	if fi, _ := os.Lstat(p); fi.Mode() != mode {
		t.Fatalf("%s has mode %v, want %v", p, fi.Mode(), mode)
	}
}
