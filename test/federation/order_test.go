package federation

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
)

// startClaudeSink is startSink's fake Claude Code session: admission
// limits lifted, every frame counted by body. Host c writes to it through
// each sender's alias worker, several messages of a sender at once.
func startClaudeSink(t *testing.T, h *host, name string) *sink {
	t.Helper()
	s := &sink{copies: map[string]int{}, order: map[string][]int{}}
	lots := 1 << 30
	fakeclaude.Start(t, fakeclaude.Config{Name: name, ConfigDir: h.W.ConfigDir, RuntimeDir: h.W.Runtime, Mode: message.ModePrompting,
		Listen: uds.Limits{MaxConnsPerPeer: 64},
		Limits: claude.Limits{Sender: clock.Bucket{Rate: float64(lots), Burst: lots}, Global: clock.Bucket{Rate: float64(lots), Burst: lots},
			DedupWindow: time.Nanosecond, MaxQueued: lots, MaxHeld: lots, MaxHeldBytes: lots},
		OnReceived: func(r fakeclaude.Received) { s.note(strings.TrimSpace(r.Content.Envelope.Body)) }})
	return s
}

func TestAThousandMessagesToAClaudeSessionOnAnotherHostArriveOnceEachInOrderPerSender(t *testing.T) {
	c := cluster(t)
	a := startHost(t, "a", c.URLs())
	hc := startHost(t, "c", c.URL(1)+","+c.URL(2)+","+c.URL(0))
	s := startClaudeSink(t, hc, "sink")
	a.waitListed(t, "sink.c")
	var sent atomic.Int64
	send(t, a, "sink.c", 0, &sent)()
	drained(t, c, s, 90*time.Second)
	s.check(t, true)
}
