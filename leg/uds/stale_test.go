package uds

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"
)

func TestSocketLedgerSweepsOnlyStaleSocketsItLists(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	at := func(name string) string { return filepath.Join(dir, name) }
	staleSocket(t, at("stale.sock"))
	staleSocket(t, at("unlisted.sock"))
	staleSocket(t, at("target.sock"))
	if err := os.Symlink(at("target.sock"), at("link.sock")); err != nil {
		t.Fatal(err)
	}
	liveSocket(t, at("live.sock"))
	if err := os.WriteFile(at("file.sock"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	ledger := SocketLedger(at("sockets"))
	if got, err := ledger.Sweep(); err != nil || got != nil {
		t.Fatalf("no ledger yet: Sweep() = %v, %v; want nothing", got, err)
	}
	listed := []string{at("stale.sock"), at("link.sock"), at("live.sock"), at("file.sock"), at("gone.sock"), "relative.sock"}
	if err := ledger.Record(listed...); err != nil {
		t.Fatal(err)
	}
	got, err := ledger.Sweep()
	if err != nil || !slices.Equal(got, []string{at("stale.sock")}) {
		t.Fatalf("Sweep() = %v, %v; want only the stale socket", got, err)
	}
	for _, kept := range []string{"unlisted.sock", "target.sock", "link.sock", "live.sock", "file.sock"} {
		if _, err := os.Lstat(at(kept)); err != nil {
			t.Errorf("%s was removed: %v", kept, err)
		}
	}
	if _, err := os.Lstat(at("stale.sock")); !os.IsNotExist(err) {
		t.Errorf("the stale socket is still there: %v", err)
	}
}
