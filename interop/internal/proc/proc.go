package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// CacheDir is where .ci/install-interop.sh installs the CLIs:
// ${GATEWAY_INTEROP_CACHE:-~/.cache/gateway-interop}.
func CacheDir() (string, error) {
	if cache := os.Getenv("GATEWAY_INTEROP_CACHE"); cache != "" {
		return cache, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".cache", "gateway-interop"), nil
}

// Bin finds a CLI: $envVar, else CacheDir() joined with rel. It must be an
// executable file; every error wraps notFound, so a caller's sentinel stays
// what errors.Is finds.
func Bin(notFound error, envVar string, rel ...string) (string, error) {
	path := os.Getenv(envVar)
	if path == "" {
		cache, err := CacheDir()
		if err != nil {
			return "", fmt.Errorf("%w: %v", notFound, err)
		}
		path = filepath.Join(append([]string{cache}, rel...)...)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%w: %v", notFound, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%w: %s is not an executable file", notFound, path)
	}
	return path, nil
}

// Terminate sends SIGTERM to pid and waits for done to close. If it has not
// after grace, it calls kill, waits for done, and reports that it had to. A
// process already gone (ESRCH) is not an error: done will tell.
func Terminate(pid int, done <-chan struct{}, grace time.Duration, kill func()) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGTERM: %w", err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(grace):
		kill()
		<-done
		return fmt.Errorf("still running %v after SIGTERM; killed", grace)
	}
}

// TailBuffer keeps the last Max bytes written to it. It is safe for
// concurrent use.
type TailBuffer struct {
	Max int

	mu sync.Mutex
	b  []byte
}

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.Max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
