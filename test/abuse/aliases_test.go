package abuse

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// Planting Qwen records (cheap files naming a live inbox) makes the bridge
// start one Claude-side alias worker per name. The workers are capped, and
// they go when their records go, within a few bridge intervals.
func TestPlantedQwenRecordsCannotOutgrowTheAliasCap(t *testing.T) {
	const maxWorkers = 4
	const planted = maxWorkers + 10
	w := gatewaytest.NewWorld(t)
	fake := fakeqwen.Start(t, fakeqwen.Config{Name: "real-qwen", Home: w.QwenHome, RuntimeDir: w.Runtime})
	g := gatewaytest.Start(t, w, "gw", "--max-alias-workers", strconv.Itoa(maxWorkers))
	// The real session's alias comes first, and stays throughout.
	waitChildren(t, g, 15*time.Second, "the real session's alias", func(n int) bool { return n == 1 })
	rssBefore := RSS(t, g.PID)

	tmpl, err := os.ReadFile(fake.RecordPath())
	if err != nil {
		t.Fatal(err)
	}
	rec, err := qwen.ParseRecord(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := range planted {
		rec.Name, rec.SessionID = fmt.Sprintf("planted-%02d", i), uuid.NewString()
		b, err := rec.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(qwen.SessionsDir(w.QwenHome), qwen.RecordFileName(rec.PID, qwen.NewSuffix()))
		if err := safefile.CreateExclusive(p, b); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}

	// Every name beyond the cap is refused, and said so once each.
	refusals := func() int { return strings.Count(g.Logs(), "alias refused") }
	peak := 0
	deadline := time.Now().Add(20 * time.Second)
	for refusals() < planted+1-maxWorkers {
		n := Children(t, g.PID)
		peak = max(peak, n)
		if n > maxWorkers {
			t.Fatalf("%d alias workers running with --max-alias-workers %d", n, maxWorkers)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d refusals logged, want %d; %d workers", refusals(), planted+1-maxWorkers, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	n := Children(t, g.PID)
	peak = max(peak, n)
	if n != maxWorkers {
		t.Fatalf("%d alias workers after the refusals, want the cap, %d", n, maxWorkers)
	}
	t.Logf("%d records planted: peak %d workers (cap %d), workers' RSS %s, gateway RSS %s -> %s",
		planted, peak, maxWorkers, MiB(childrenRSS(t, g.PID)), MiB(rssBefore), MiB(RSS(t, g.PID)))
	if got := metric(t, g, `gateway_drops_total{leg="claude",reason="alias-limit"}`); got != planted+1-maxWorkers {
		t.Errorf("alias-limit drops counted = %d, want %d", got, planted+1-maxWorkers)
	}

	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	waitChildren(t, g, 10*time.Second, "the planted records' workers to go", func(n int) bool { return n == 1 })
	t.Logf("records deleted: workers back to 1 in %v", time.Since(start).Round(100*time.Millisecond))
}

// waitChildren polls the gateway's child processes until ok holds.
func waitChildren(t *testing.T, g *gatewaytest.Gateway, d time.Duration, what string, ok func(int) bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		n := Children(t, g.PID)
		if ok(n) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %d workers after %v", what, n, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// childrenRSS sums the resident memory of pid's live children.
func childrenRSS(t *testing.T, pid int) int64 {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone since the listing
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 3 || f[0] == "Z" || f[1] != strconv.Itoa(pid) {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(st)) {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				total += kb << 10
			}
		}
	}
	return total
}

// metric reads one counter of the gateway's /metrics (0 when absent).
func metric(t *testing.T, g *gatewaytest.Gateway, series string) int {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", g.Socket())
	}}}
	resp, err := hc.Get("http://gateway/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
	}
	return 0
}
