package uds

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
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

func TestARegistryDirIsListedAgainOnceItChanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	d := &RegistryDir{Path: dir}
	age := func() { // as a directory nobody wrote in lately
		t.Helper()
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(dir, old, old); err != nil {
			t.Fatal(err)
		}
	}
	var gen uint64
	names := func(step string, want ...string) []fs.DirEntry {
		t.Helper()
		ents, g, err := d.List()
		gen = g
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: listed %q, want %q", step, got, want)
		}
		return ents
	}
	write := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	names("empty")
	write("1.json")
	age()
	first := names("one file", "1.json")
	firstGen := gen
	if again := names("unchanged", "1.json"); &again[0] != &first[0] || gen != firstGen || gen == 0 {
		t.Fatalf("an unchanged directory was read again, or told apart (gen %d, then %d)", firstGen, gen)
	}
	write("2.json") // moves the mtime
	names("a file added", "1.json", "2.json")
	names("a file added, still within the racy window", "1.json", "2.json")
	age()
	names("aged", "1.json", "2.json")
	if gen == 0 || gen == firstGen {
		t.Fatalf("a new listing kept has gen %d, the first had %d", gen, firstGen)
	}
	if err := os.Rename(filepath.Join(dir, "2.json"), filepath.Join(dir, "3.json")); err != nil {
		t.Fatal(err)
	}
	names("a file renamed", "1.json", "3.json")
	age()
	names("aged again", "1.json", "3.json")
	if err := os.Remove(filepath.Join(dir, "1.json")); err != nil {
		t.Fatal(err)
	}
	names("a file removed", "3.json")
	age()
	names("aged once more", "3.json")
	if err := os.Chmod(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.List(); !errors.Is(err, ErrUnsafeRegistry) {
		t.Fatalf("a directory the group may write: List() = %v, want ErrUnsafeRegistry", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	names("gone")
}
