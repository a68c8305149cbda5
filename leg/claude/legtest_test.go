package claude_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
)

// The Claude leg keeps the Leg contract, with one fake Claude Code session
// registered beside it.
func TestClaudeLegKeepsTheLegContract(t *testing.T) {
	legtest.Run(t, func(t *testing.T) legtest.Subject {
		configDir, runtime := t.TempDir(), testutil.ShortTempDir(t)
		session := fakeclaude.Start(t, fakeclaude.Config{Name: "work-legtest", ConfigDir: configDir, RuntimeDir: runtime})
		p, err := claude.Register(claude.Config{ConfigDir: configDir, RuntimeDir: runtime, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return legtest.Subject{Leg: p, Inbound: func(t *testing.T) {
			if _, err := session.Send(testutil.Context(t, 10*time.Second), p.Address(), "hello", message.ModePrompting); err != nil {
				t.Fatal(err)
			}
		}}
	})
}
