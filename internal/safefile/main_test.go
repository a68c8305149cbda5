package safefile

import (
	"os"
	"testing"
)

// privateDir is a fresh 0700 directory.
func privateDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}
