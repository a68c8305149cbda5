package qwen

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// No test leaves a goroutine behind. The test binary doubles as a session
// process of its own that listens on a socket (holder_test.go).
func TestMain(m *testing.M) {
	if path := os.Getenv(listenEnv); path != "" {
		os.Exit(testutil.RunCountingListener(path))
	}
	goleak.VerifyTestMain(gatewaytest.Cleaned(m)) // the peer suite starts gateway binaries
}
