package fakeclaude

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
)

// WaitAlias waits up to within for a gateway's alias worker named name to
// register in the Claude config directory configDir (the session a fake
// or real Claude Code session there messages to reach it), and returns its
// address.
func WaitAlias(tb testing.TB, configDir, name string, within time.Duration) string {
	tb.Helper()
	var addr string
	testutil.EventuallyWithin(tb, within, "an alias worker named "+name, func() bool {
		files, _ := filepath.Glob(filepath.Join(configDir, "sessions", "*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if e, err := claude.ParseEntry(b); err == nil && e.Name == name && e.Kind == claude.KindAlias {
				addr = addressing.UDS(e.MessagingSocketPath)
				return true
			}
		}
		return false
	})
	return addr
}
