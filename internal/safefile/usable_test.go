package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"
)

func TestUsableDirSaysWhatIsWrongAndWhatToDo(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(root, "loose")
	if err := os.Mkdir(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(loose, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       error // nil: usable
		fix        string
	}{
		{"a directory not made yet is usable", filepath.Join(root, "new", "state"), nil, ""},
		{"loose bits are usable: EnsureDir tightens them", loose, nil, ""},
		{"a file is not a directory", file, ErrNotDir, "move the file away"},
		{"a path through a file is not a directory", filepath.Join(file, "state"), ErrNotDir, "a part of the path is a file"},
		{"a symlink is never followed", link, ErrSymlink, "the real directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := UsableDir(tt.path)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("UsableDir = %v, want usable", err)
				}
				return
			}
			var de *DirError
			if !errors.Is(err, tt.want) || !errors.As(err, &de) || !strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), tt.fix) {
				t.Fatalf("UsableDir = %v, want %v naming the path and %q", err, tt.want, tt.fix)
			}
		})
	}
	t.Run("another user's directory is not ours", func(t *testing.T) {
		testutil.Need(t, os.Geteuid() == 0, "making a directory another user's needs root")
		other := filepath.Join(root, "other")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		if err := UsableDir(other); !errors.Is(err, ErrNotOwner) || !strings.Contains(err.Error(), "chown") {
			t.Fatalf("UsableDir = %v, want ErrNotOwner and chown", err)
		}
	})
	t.Run("a directory we may not read, write and enter", func(t *testing.T) {
		// Root reads and writes any directory (CI runs as root): as root the
		// check looks as the directory's owner, an ordinary user, who must
		// reach it through a parent anyone may search.
		asRoot := os.Geteuid() == 0
		parent := root
		if asRoot {
			p, err := os.MkdirTemp("", "usable")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(p) })
			if err := os.Chmod(p, 0o711); err != nil {
				t.Fatal(err)
			}
			parent = p
		}
		closed := filepath.Join(parent, "closed")
		if err := os.Mkdir(closed, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(closed, 0o700) })
		check := func() error { return UsableDir(closed) }
		if asRoot {
			if err := os.Chown(closed, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			check = func() error { return asUser(t, nobody, func() error { return UsableDir(closed) }) }
		}
		if err := check(); !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "chmod 700 "+closed) {
			t.Fatalf("UsableDir = %v, want a permission error and chmod 700", err)
		}
	})
}
