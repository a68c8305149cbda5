package uds

import (
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// helperEnv turns the test binary into a child process that sleeps, so
// tests have a live process that is not us.
const helperEnv = "UDS_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "sleep" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
