package uds

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestARegistryDirIsCheckedAgainAfterEveryChange(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sessions")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	d := &RegistryDir{Path: dir}
	check := func(step string, wantUnsafe bool) {
		t.Helper()
		for range 2 { // the first check of a state, then the one it lets pass quickly
			err := d.Check()
			if got := errors.Is(err, ErrUnsafeRegistry); got != wantUnsafe {
				t.Fatalf("%s: Check() = %v, want unsafe %v", step, err, wantUnsafe)
			}
		}
	}
	check("a private directory", false)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	check("writable by others", true)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	check("private again", false)
	other := filepath.Join(root, "elsewhere")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, dir); err != nil {
		t.Fatal(err)
	}
	check("a symlink in its place", true)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	check("gone (no records)", false)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	check("made again, readable by others", false) // 022 is what is refused
	if err := os.Chmod(dir, 0o775); err != nil {
		t.Fatal(err)
	}
	check("writable by the group", true)
}
