package abuse

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// claudeFrame is a user frame from a sender that names itself name.
func claudeFrame(name, body string) []any {
	return []any{map[string]any{"msgV": 1, "type": "user", "msg_id": uuid.NewString(), "from": "uds:/nowhere/" + name + ".sock",
		"message": map[string]any{"role": "user", "content": body}}}
}

// TestHoldsAreBounded sends frames with 200 KB bodies, each from a sender
// name of its own, to a gateway that holds everything. Before, every one was
// held (2,000 of them: 2.67 GB resident, a 401 MB GET /v1/held); now the
// shared bucket admits 32 and one a second, the hold keeps at most 50
// messages and 8 MiB of bodies, and the rest are dropped queue-full or
// rate-limited.
func TestHoldsAreBounded(t *testing.T) {
	const (
		frames       = 300
		maxHeld      = 50
		maxHeldBytes = 8 << 20
		maxGrowth    = 128 << 20 // before: every body held, 60 MB of them, several times over: +456 MiB
	)
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "holds", "--inbound", "hold")
	sock := claudeSocket(t, g)
	before := PeakRSS(t, g.PID)
	body := strings.Repeat("h", 200<<10)
	failed := 0
	for i := range frames {
		if err := sendLines(sock, claudeFrame(fmt.Sprintf("s%d", i), fmt.Sprintf("%d %s", i, body))); err != nil {
			failed++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	held, err := g.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	size := 0
	for _, h := range held {
		size += len(h.Message.Body)
	}
	grew := PeakRSS(t, g.PID) - before
	t.Logf("%d frames of 200 KB (%d sends failed): %d held, %s of bodies, GET /v1/held in %v, peak RSS grew %s",
		frames, failed, len(held), MiB(int64(size)), took.Round(time.Millisecond), MiB(grew))
	if len(held) > maxHeld || size > maxHeldBytes {
		t.Errorf("%d held with %s of bodies, want at most %d and %s", len(held), MiB(int64(size)), maxHeld, MiB(maxHeldBytes))
	}
	if grew > maxGrowth {
		t.Errorf("peak RSS grew %s, want under %s", MiB(grew), MiB(maxGrowth))
	}
}

// TestFreshSenderNamesShareOneBucket sends small frames, each from a sender
// name of its own, to a gateway that delivers them. A fresh name once
// bought a fresh bucket every time (4,963 of 5,000 delivered); now all of
// them draw on the shared bucket: 32, then one a second.
func TestFreshSenderNamesShareOneBucket(t *testing.T) {
	const frames = 300
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "bucket")
	sock := claudeSocket(t, g)
	events := g.WatchCLI(t)
	start := time.Now()
	for i := range frames {
		if err := sendLines(sock, claudeFrame(fmt.Sprintf("s%d", i), fmt.Sprintf("message %d", i))); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	elapsed := time.Since(start)
	// The last frame is answered one way or the other: wait for its event.
	last := fmt.Sprintf("message %d", frames-1)
	events.Wait(t, 10*time.Second, func(ev message.Event) bool {
		return ev.Message != nil && ev.Message.Body == last || ev.Drop != nil
	})
	time.Sleep(200 * time.Millisecond) // the rest of the stream
	delivered := 0
	for i := range frames {
		body := fmt.Sprintf("message %d", i)
		if _, ok := events.Find(func(ev message.Event) bool { return ev.Message != nil && ev.Message.Body == body }); ok {
			delivered++
		}
	}
	limit := 32 + int(elapsed.Seconds()+1)
	t.Logf("%d frames from %d sender names in %v: %d delivered (the shared bucket allows %d)", frames, frames, elapsed.Round(time.Millisecond), delivered, limit)
	if delivered > limit {
		t.Fatalf("%d of %d delivered, want at most %d", delivered, frames, limit)
	}
}
