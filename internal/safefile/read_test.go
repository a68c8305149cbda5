package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"
)

func writeMode(t *testing.T, dir, name, body string, perm os.FileMode) string {
	return testutil.WriteFile(t, filepath.Join(dir, name), []byte(body), perm)
}

func TestReadSecret(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	good := writeMode(t, dir, "tok", "secret\n", 0o600)
	t.Run("a private regular file is read whole", func(t *testing.T) {
		b, fi, err := ReadSecret(good, 64, nil)
		if err != nil || string(b) != "secret\n" || fi == nil {
			t.Fatalf("ReadSecret = %q, %v, %v", b, fi, err)
		}
	})
	t.Run("an unchanged file is not read again", func(t *testing.T) {
		_, fi, _ := ReadSecret(good, 64, nil)
		b, again, err := ReadSecret(good, 64, fi)
		if err != nil || b != nil || again != fi {
			t.Fatalf("ReadSecret(prev) = %q, %v, %v; want nil bytes and prev", b, again, err)
		}
	})
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	refusals := []struct {
		name, path string
		want       error
		text       string
	}{
		{"a group-readable file is refused with its mode", writeMode(t, dir, "g", "x", 0o640), ErrLooseMode, "chmod 600"},
		{"a world-writable file is refused", writeMode(t, dir, "w", "x", 0o602), ErrLooseMode, "0602"},
		{"a symlink is refused, even to a good file", link, ErrSymlink, "symlink"},
		{"a FIFO is refused without blocking", fifo, ErrNotRegular, "regular"},
		{"a directory is refused", dir, ErrNotRegular, "regular"},
		{"a file over the cap is refused", writeMode(t, dir, "big", strings.Repeat("x", 65), 0o600), ErrTooLarge, "too large"},
		{"a missing file is fs.ErrNotExist", filepath.Join(dir, "gone"), fs.ErrNotExist, "gone"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ReadSecret(tt.path, 64, nil)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("ReadSecret = %v, want %v mentioning %q", err, tt.want, tt.text)
			}
		})
	}
	t.Run("a mode error carries the mode", func(t *testing.T) {
		_, _, err := ReadSecret(writeMode(t, dir, "m", "x", 0o644), 64, nil)
		var me *ModeError
		if !errors.As(err, &me) || me.Mode.Perm() != 0o644 {
			t.Fatalf("err = %v, want a *ModeError with 0644", err)
		}
	})
}

func TestReadOwnerWritable(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	shared := writeMode(t, dir, "conf", `{"a":1}`, 0o644)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(shared, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{shared, link} {
		if b, err := ReadOwnerWritable(p, 64); err != nil || string(b) != `{"a":1}` {
			t.Fatalf("ReadOwnerWritable(%s) = %q, %v: a readable file, or a symlink to one, is fine", p, b, err)
		}
	}
	if _, err := ReadOwnerWritable(writeMode(t, dir, "w", "x", 0o620), 64); !errors.Is(err, ErrLooseMode) || !strings.Contains(err.Error(), "chmod go-w") {
		t.Fatalf("group-writable: %v, want ErrLooseMode saying chmod go-w", err)
	}
	if _, err := ReadOwnerWritable(dir, 64); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("directory: %v, want ErrNotRegular", err)
	}
	if _, err := ReadOwnerWritable(filepath.Join(dir, "gone"), 64); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v, want fs.ErrNotExist", err)
	}
}
