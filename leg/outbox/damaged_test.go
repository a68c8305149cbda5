package outbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/leg/outbox"
)

// TestADamagedFileFailsToOpenWithoutAPanic damages the page headers of a
// store, as a torn disk write or a stray tool might: bbolt panics on such
// pages (unexpected flags, a bad count, an invalid freelist), and Open
// turns that into its clear "move it aside" error.
func TestADamagedFileFailsToOpenWithoutAPanic(t *testing.T) {
	dir := stateDir(t)
	path := filepath.Join(dir, outbox.FileName)
	s := openStore(t, dir, outbox.Options{})
	for i := range 20 {
		add(t, s, msg(fmt.Sprintf("m%02d", i), "bridge:s1", strings.Repeat("body ", 50)))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize() // bbolt's page size by default
	for _, pg := range []int{3, 4, 5, 6, 10} {
		for _, off := range []int{8, 10} { // a page's flags, its count
			for _, b := range []byte{0x00, 0xff, 0x7f} {
				t.Run(fmt.Sprintf("page %d offset %d set to %#x", pg, off, b), func(t *testing.T) {
					at := pg*page + off
					if at+2 > len(good) {
						t.Fatalf("the file has %d bytes, so this damage would not be made: fix the table", len(good))
					}
					bad := append([]byte(nil), good...)
					bad[at], bad[at+1] = b, b
					if err := os.WriteFile(path, bad, 0o600); err != nil {
						t.Fatal(err)
					}
					s, err := openRecovering(path)
					if err != nil {
						if !strings.Contains(err.Error(), "move it aside") {
							t.Fatalf("error %q does not say what to do", err)
						}
						t.Log(err)
						return
					}
					// Some damage bbolt does not notice on open; the store then works.
					s.Close()
				})
			}
		}
	}
}

// openRecovering is outbox.Open, failing the test on a panic instead of
// ending the run.
func openRecovering(path string) (s *outbox.Store, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("Open panicked: %v", p)
		}
	}()
	return outbox.Open(path, outbox.Options{})
}
