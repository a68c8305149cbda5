package gatewaytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built is the gateway binary, built at most once per test process.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Bin returns the path of the gateway binary, building it on first use.
func Bin(tb testing.TB) string {
	tb.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "gatewaytest-bin")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "gateway")
		out, err := exec.Command("go", "build", "-o", built.path, "github.com/sessiongateway/gateway/cmd/gateway").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("building the gateway: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		tb.Fatal(built.err)
	}
	return built.path
}

// Main runs the tests and then removes the binary Bin built. A package
// whose tests start gateways calls it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(gatewaytest.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	return code
}
