package claude

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// No test leaves a goroutine behind. The test binary doubles as the parent
// process of the parent-death test (see pdeathsig_test.go).
func TestMain(m *testing.M) {
	if os.Getenv(poolParentEnv) == "1" {
		runPoolParent()
		return
	}
	goleak.VerifyTestMain(m)
}
