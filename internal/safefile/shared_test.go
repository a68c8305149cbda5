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
