//go:build unix

package didfile

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

func TestOpenRefusesAFIFOWithoutBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "dids.json")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opening a FIFO for reading blocks until a writer comes; Open must
	// refuse it from its stat instead.
	_, err := Open(p)
	var fe *FileError
	if !errors.As(err, &fe) || fe.Reason != ReasonNotRegular {
		t.Fatalf("Open = %v, want not-regular", err)
	}
}
