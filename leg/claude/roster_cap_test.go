package claude

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
)

// The cost: entry names allow billions, and a listing read, kept and
// probed every one, at every bridge sync, resolve and send. A listing now
// reads at most MaxEntries, those of live pids first (so planted files
// cannot push a live session out), and says so once.
func TestAListingReadsABoundedNumberOfEntriesAndStillListsTheLiveSession(t *testing.T) {
	r := startRig(t, Config{})
	dir := r.p.sessionsDir
	sock := filepath.Join(r.socks, "real.sock")
	pid, start := listenerProcess(t, sock, false)
	writeEntry(t, dir, pid, map[string]any{"procStart": start, "pidDomain": r.p.pidDomain, "messagingSocketPath": sock})
	// Planted for pids above any pid_max (listed before the live one), of another pid domain (never
	// swept), each naming a socket nobody listens on.
	const foreign = "linux:0123456789abcdef0123456789abcdef:pid:[4026531999]"
	silent(t, filepath.Join(r.socks, "none.sock"))
	const planted = 2 * MaxEntries
	for i := range planted {
		writeEntry(t, dir, 1_000_000_000+i, map[string]any{"procStart": "1", "pidDomain": foreign,
			"messagingSocketPath": filepath.Join(r.socks, "none.sock")})
	}
	for range 2 {
		entries, _, err := r.p.readEntries()
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != MaxEntries {
			t.Fatalf("a listing read %d entries, want %d", len(entries), MaxEntries)
		}
		if pids := listedPids(t, r.p); !slices.Contains(pids, pid) {
			t.Fatalf("the live session %d is not listed among %v", pid, pids)
		}
	}
	drops := 0
	for {
		select {
		case ev := <-r.events:
			if ev.Type == message.EventDrop && ev.Drop.Reason == message.DropRecordLimit {
				drops++
			}
			continue
		case <-time.After(100 * time.Millisecond):
		}
		break
	}
	if logged := strings.Count(r.logs.String(), "claude registry entries left unread"); drops != 1 || logged != 1 {
		t.Fatalf("the entries left unread were counted %d times and logged %d, want once each", drops, logged)
	}
}
