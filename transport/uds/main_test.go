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

// privateDir is a fresh 0700 directory with a short path, so socket paths
// inside stay well under the 107-byte limit whatever the test's name.
func privateDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "uds")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}
