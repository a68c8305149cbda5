package uds

import (
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sessiongateway/gateway/internal/testutil"
)

// helperEnv turns the test binary into a child process that sleeps, so
// tests have a live process that is not us.
const helperEnv = "UDS_TEST_HELPER"

func TestMain(m *testing.M) {
	switch mode := os.Getenv(helperEnv); {
	case mode == "sleep":
		time.Sleep(time.Minute)
		os.Exit(0)
	case strings.HasPrefix(mode, "listen:"):
		os.Exit(testutil.RunCountingListener(strings.TrimPrefix(mode, "listen:")))
	}
	goleak.VerifyTestMain(m)
}
