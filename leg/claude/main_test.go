package claude

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// No test leaves a goroutine behind. The test binary doubles as the parent
// process of the parent-death test (pdeathsig_test.go) and as a sender in a
// process of its own (replyowner_test.go) and as an alias worker process
// (alias_senderpid_test.go).
func TestMain(m *testing.M) {
	if os.Getenv(poolParentEnv) == "1" {
		runPoolParent()
		return
	}
	if spec := os.Getenv(listenEnv); spec != "" {
		os.Exit(runListener(spec))
	}
	if name := os.Getenv(aliasWorkerEnv); name != "" {
		os.Exit(runAliasWorker(name))
	}
	if path := os.Getenv(dialEnv); path != "" {
		os.Exit(runDialer(path))
	}
	goleak.VerifyTestMain(gatewaytest.Cleaned(m)) // the peer suite starts gateway binaries
}
