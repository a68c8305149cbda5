package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestShortTempDirLeavesRoomForASocket(t *testing.T) {
	d := ShortTempDir(t, "with space", "run")
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		t.Fatalf("%s: %v", d, err)
	}
	if !strings.HasSuffix(d, filepath.Join("with space", "run")) {
		t.Fatalf("dir %s does not end in the sub-path", d)
	}
	// A Claude peer socket under it: cc-socks/<pid>.sock.
	if sock := filepath.Join(d, "cc-socks", "4194304.sock"); len(sock) > 100 {
		t.Fatalf("%s is %d bytes, over the socket path limit", sock, len(sock))
	}
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	Eventually(t, "the third poll", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("polled %d times, want 3", n)
	}
}

func TestContextEndsAfterItsTimeout(t *testing.T) {
	ctx := Context(t, time.Millisecond)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the context did not end")
	}
}

func TestPercentileAndMean(t *testing.T) {
	d := []time.Duration{4, 1, 3, 2}
	if got := Percentile(d, 0.5); got != 3 {
		t.Errorf("p50 = %v, want 3", got)
	}
	if got := Percentile(d, 0.99); got != 4 {
		t.Errorf("p99 = %v, want 4", got)
	}
	if got := Mean(d); got != 2 {
		t.Errorf("mean = %v, want 2 (rounded down)", got)
	}
	if Percentile(nil, 0.5) != 0 || Mean(nil) != 0 {
		t.Error("no latencies should give 0")
	}
	if d[0] != 4 {
		t.Error("Percentile sorted its argument")
	}
}
