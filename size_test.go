package gateway_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The sizes the code keeps to: the binary's package holds verbs and wiring
// only (under 2,500 lines, no file over 300), and no file of ours over 600.
// Test files are not counted.
const (
	maxFileLines = 600
	maxCmdFile   = 300
	maxCmdLines  = 2500
)

func TestFilesStayWithinTheirSizes(t *testing.T) {
	cmdTotal := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n := bytes.Count(b, []byte("\n"))
		if n > maxFileLines {
			t.Errorf("%s: %d lines, over %d", path, n, maxFileLines)
		}
		if filepath.Dir(path) == filepath.Join("cmd", "gateway") {
			cmdTotal += n
			if n > maxCmdFile {
				t.Errorf("%s: %d lines, over %d for a file of the binary's package", path, n, maxCmdFile)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cmdTotal >= maxCmdLines {
		t.Errorf("cmd/gateway: %d lines, at or over %d: move logic into a package", cmdTotal, maxCmdLines)
	}
}
