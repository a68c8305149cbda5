package gatewaytest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// binDirPrefix names the directory each test process builds the gateway
// into, followed by its pid.
const binDirPrefix = "gatewaytest-bin-"

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
		sweepBinDirs()
		built.dir = filepath.Join(os.TempDir(), binDirPrefix+strconv.Itoa(os.Getpid()))
		if built.err = os.MkdirAll(built.dir, 0o700); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "gateway")
		out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", built.path, "github.com/sessiongateway/gateway/cmd/gateway").CombinedOutput()
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
//
// or hands Cleaned(m) on to a TestMain helper such as goleak.VerifyTestMain.
func Main(m interface{ Run() int }) int {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	return code
}

// Cleaned is m with Main's clean-up after its Run.
func Cleaned(m interface{ Run() int }) interface{ Run() int } { return cleaned{m} }

type cleaned struct{ m interface{ Run() int } }

func (c cleaned) Run() int { return Main(c.m) }

// sweepBinDirs removes what test processes that died before Main's
// clean-up (a panic, a kill on timeout) left behind.
func sweepBinDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binDirPrefix+"*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), binDirPrefix))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
}
