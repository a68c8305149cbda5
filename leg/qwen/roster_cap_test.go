package qwen

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// The cost: record file names allow billions per process, and a listing
// read and probed every one (20,000 took about 2 s, at every bridge sync).
// A listing now reads a bounded number per process, so one process's
// files cannot crowd out another's session, and says so once.
func TestAListingReadsABoundedNumberOfRecordsPerProcessAndStillListsTheRealSession(t *testing.T) {
	ns, _ := identity(t)
	var logs bytes.Buffer
	var mu sync.Mutex
	p := registerTestPeer(t, Config{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	events, _ := runPeer(t, p)
	dir := filepath.Dir(p.RecordPath())
	socks := testutil.ShortTempDir(t)
	// The listeners count every probe; drained until after they stopped
	// (this cleanup runs after theirs).
	stopDrain := make(chan struct{})
	t.Cleanup(func() { close(stopDrain) })
	drain := func(o *otherProcess) {
		go func() {
			for {
				select {
				case <-o.counts:
				case <-stopDrain:
					return
				}
			}
		}()
	}
	real := listenInOtherProcess(t, filepath.Join(socks, "real.sock"))
	drain(real)
	plantRecord(t, dir, real.pid, real.path)
	planter := listenInOtherProcess(t, filepath.Join(socks, "planter.sock"))
	drain(planter)
	start, _ := ProcStartToken(planter.pid)
	const planted = 3 * MaxRecordsPerPID
	for i := range planted {
		rec := Record{PID: planter.pid, ProcStart: start, PidNS: ns, SessionID: uuid.NewString(), Cwd: "/", Name: "victim",
			StartedAt: 1, Kind: KindTUI, IPCPath: planter.path, IPCToken: NewIPCToken()}
		b, err := rec.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := safefile.WriteAtomic(filepath.Join(dir, RecordFileName(planter.pid, fmt.Sprintf("%08x", i))), b); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		ss, err := p.Sessions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		byPID := map[int]int{}
		for _, s := range ss {
			byPID[s.PID]++
		}
		if byPID[real.pid] != 1 || byPID[planter.pid] != MaxRecordsPerPID {
			t.Fatalf("listed %d of the real session and %d of %d planted, want 1 and %d", byPID[real.pid], byPID[planter.pid], planted, MaxRecordsPerPID)
		}
	}
	drops := 0
	for len(events) > 0 {
		if ev := <-events; ev.Type == message.EventDrop && ev.Drop.Reason == message.DropRecordLimit {
			drops++
		}
	}
	mu.Lock()
	logged := bytes.Count(logs.Bytes(), []byte("qwen records left unread"))
	mu.Unlock()
	if drops != 1 || logged != 1 {
		t.Fatalf("the records left unread were counted %d times and logged %d, want once each", drops, logged)
	}
}

// A listing whose caller has given up stops reading.
func TestAListingStopsWhenItsContextEnds(t *testing.T) {
	identity(t)
	p := registerTestPeer(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Sessions(ctx); err == nil {
		t.Fatal("a listing with its context ended succeeded")
	}
}
