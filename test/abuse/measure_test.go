package abuse

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

func TestMain(m *testing.M) { os.Exit(gatewaytest.Main(m)) }

// procStatus reads one kB field (VmRSS, VmHWM) of /proc/PID/status.
func procStatus(tb testing.TB, pid int, field string) int64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				tb.Fatalf("%s of %d: %v", field, pid, err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// RSS is the process's resident memory now, in bytes.
func RSS(tb testing.TB, pid int) int64 { return procStatus(tb, pid, "VmRSS") }

// PeakRSS is the most the process has held resident, in bytes.
func PeakRSS(tb testing.TB, pid int) int64 { return procStatus(tb, pid, "VmHWM") }

// Children counts the live processes whose parent is pid (alias workers).
func Children(tb testing.TB, pid int) int {
	tb.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue // gone since the listing
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := b[bytes.LastIndexByte(b, ')')+1:]
		f := strings.Fields(string(rest))
		if len(f) > 2 && f[0] != "Z" && f[1] == strconv.Itoa(pid) {
			n++
		}
	}
	return n
}

// DirBytes is the size of the regular files under dir (0 when it is absent).
func DirBytes(tb testing.TB, dir string) int64 {
	tb.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return total
}

// MiB prints a byte count for a failure message.
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func TestTheMeasuresSeeThisProcess(t *testing.T) {
	pid := os.Getpid()
	if r := RSS(t, pid); r <= 0 || r > PeakRSS(t, pid) {
		t.Fatalf("RSS %d, peak %d", r, PeakRSS(t, pid))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b", "c"), make([]byte, 24), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := DirBytes(t, dir); got != 1024 {
		t.Fatalf("DirBytes = %d, want 1024", got)
	}
	if got := DirBytes(t, filepath.Join(dir, "absent")); got != 0 {
		t.Fatalf("DirBytes of an absent dir = %d", got)
	}
	if got := Children(t, pid); got != 0 {
		t.Fatalf("this test process has %d children before starting any", got)
	}
}
