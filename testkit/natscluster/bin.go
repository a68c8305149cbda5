package natscluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// BinEnv names a nats-server binary to use instead of building one.
const BinEnv = "GATEWAY_NATS_SERVER"

const module = "github.com/nats-io/nats-server/v2"

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Bin returns the nats-server binary: $GATEWAY_NATS_SERVER when set, else
// one built from the module version go.mod pins and cached under the
// user's cache directory (gateway-nats/VERSION), so each version is built
// once per machine. A binary that cannot be had fails the test: the
// federation tests are never skipped.
func Bin(tb testing.TB) string {
	tb.Helper()
	binOnce.Do(func() { binPath, binErr = locate() })
	if binErr != nil {
		tb.Fatalf("natscluster: no nats-server: %v", binErr)
	}
	return binPath
}

func locate() (string, error) {
	if p := os.Getenv(BinEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", BinEnv, err)
		}
		return p, nil
	}
	out, err := goCmd("list", "-m", "-f", "{{.Version}}", module)
	if err != nil {
		return "", err
	}
	version := strings.TrimSpace(out)
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "gateway-nats", version)
	p := filepath.Join(dir, "nats-server")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Built beside and renamed into place: test processes of several
	// packages may build at once, and none may run a half-written file.
	tmp, err := os.CreateTemp(dir, "nats-server-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if _, err := goCmd("build", "-o", tmp.Name(), module); err != nil {
		return "", err
	}
	return p, os.Rename(tmp.Name(), p)
}

// goCmd runs the go tool in this module (the test's working directory is
// inside it).
func goCmd(args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}
