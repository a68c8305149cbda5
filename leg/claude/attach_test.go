package claude

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSpoolGCRemovesOnlyOldRegularFiles(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	write := func(name string, age time.Duration) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := write("old", 25*time.Hour)
	fresh := write("fresh", time.Hour)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(old, link); err != nil {
		t.Fatal(err)
	}
	if n := gcSpool(dir, now); n != 1 {
		t.Fatalf("removed %d, want 1", n)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Error("the day-old file was kept")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("the fresh file was removed")
	}
	if _, err := os.Lstat(link); err != nil {
		t.Error("the link was removed")
	}
}

func TestSafeFileName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"notes.txt", "notes.txt"}, {"a/b", "a_b"}, {"..", "file"}, {"", "file"}, {"x\ny", "x_y"},
	}
	for _, tt := range tests {
		if got := safeFileName(tt.in); got != tt.want {
			t.Errorf("safeFileName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
