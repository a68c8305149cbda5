package safefile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestOpenUnderFollowsNoSymlink(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "files")
	outside := filepath.Join(root, "secret")
	for p, body := range map[string]string{outside: "secret", filepath.Join(dir, "a", "b.txt"): "b", filepath.Join(dir, "top.txt"): "top"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(dir, "a", "up")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rel, want string
		err       error
	}{
		{"top.txt", "top", nil},
		{"a/b.txt", "b", nil},
		{"link", "", ErrSymlink},
		{"a/up/secret", "", ErrSymlink},
		{"../secret", "", ErrOutside},
		{"a/../top.txt", "", ErrOutside},
		{"/etc/passwd", "", ErrOutside},
		{"a//b.txt", "", ErrOutside},
		{"a", "", ErrNotRegular},
		{"top.txt/x", "", ErrNotDir},
		{"fifo", "", ErrNotRegular},
		{"missing", "", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			f, err := OpenUnder(dir, tt.rel)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b, _ := io.ReadAll(f)
			if string(b) != tt.want {
				t.Fatalf("read %q, want %q", b, tt.want)
			}
		})
	}
}
