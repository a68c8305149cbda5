package container

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// root is the private podman set-up scripts/container-test.sh made (its
// store holds gateway:latest and gateway-nats:latest); "" skips the tests.
var root = os.Getenv("GATEWAY_CONTAINER_ROOT")

// probeBin is the probe, built once, mounted into containers read-only.
var probeBin string

func TestMain(m *testing.M) {
	if root != "" {
		dir, err := os.MkdirTemp(root, "probe-")
		if err == nil {
			probeBin = filepath.Join(dir, "probe")
			cmd := exec.Command("go", "build", "-o", probeBin, "./probe")
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, berr := cmd.CombinedOutput(); berr != nil {
				err = fmt.Errorf("%v\n%s", berr, out)
			}
		}
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "container tests: building the probe:", err)
			os.Exit(1)
		}
	}
	os.Exit(gatewaytest.Main(m))
}

// needPodman skips unless scripts/container-test.sh set the store up.
func needPodman(t *testing.T) {
	t.Helper()
	if root == "" {
		t.Skip("runs the real container: bash scripts/container-test.sh (as root; installs podman, runc and podman-compose)")
	}
}

// podmanFlags are the global flags these hosts need: crun fails on their
// hybrid cgroups, and there is no systemd to manage cgroups.
var podmanFlags = []string{"--runtime", "runc", "--cgroup-manager", "cgroupfs"}

// runLimits keep the container's ulimits within the hosts' hard limits
// (podman's defaults exceed them).
var runLimits = []string{"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1000:1000"}

// podman runs podman with args and returns its stdout; a failure is fatal.
func podman(t testing.TB, args ...string) string {
	t.Helper()
	out, err := podmanErr(args...)
	if err != nil {
		t.Fatalf("podman %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// podmanErr runs podman with args, within a minute.
func podmanErr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", append(append([]string{}, podmanFlags...), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// container is one running container the test removes at cleanup.
type container struct {
	name string
}

// start runs args (a podman run line without "run") detached and removes
// the container at cleanup, printing its log if the test failed.
func start(t *testing.T, name string, args ...string) *container {
	t.Helper()
	c := &container{name: name}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s's log ---\n%s", name, c.logs())
		}
		if _, err := podmanErr("rm", "--force", "--time", "0", name); err != nil {
			t.Logf("removing %s: %v", name, err)
		}
	})
	run := append([]string{"run", "--detach", "--name", name}, runLimits...)
	podman(t, append(run, args...)...)
	return c
}

// logs is what the container wrote, stdout and stderr (where the gateway
// logs) together.
func (c *container) logs() string {
	out, _ := exec.Command("podman", append(append([]string{}, podmanFlags...), "logs", c.name)...).CombinedOutput()
	return string(out)
}

// inspect is one field of the container's state, by Go template.
func (c *container) inspect(t testing.TB, format string) string {
	t.Helper()
	return strings.TrimSpace(podman(t, "inspect", "--format", format, c.name))
}

// pid is the container's main process as the host sees it.
func (c *container) pid(t testing.TB) int {
	t.Helper()
	var pid int
	fmt.Sscan(c.inspect(t, "{{.State.Pid}}"), &pid)
	return pid
}

// healthy runs the image's HEALTHCHECK through podman until it passes.
func (c *container) healthy(t *testing.T) {
	t.Helper()
	var last error
	ok := testutil.Within(30*time.Second, func() bool {
		_, last = podmanErr("healthcheck", "run", c.name)
		return last == nil
	})
	if !ok {
		t.Fatalf("podman healthcheck run %s did not pass within 30 s: %v", c.name, last)
	}
}

// exec runs the gateway's CLI inside the container as its user.
func (c *container) exec(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return podmanErr(append([]string{"exec", c.name, "/gateway"}, args...)...)
}

// probed is what the probe reports from inside a container.
type probed struct {
	UID, GID     int
	Status       map[string]string
	RootWritable string
	TmpWritable  string
	Files        []struct {
		Path, Mode string
		UID, GID   uint32
	}
	Errors []string
}

// probe runs the probe in the container (mounted at /probe) on paths.
func (c *container) probe(t *testing.T, paths ...string) probed {
	t.Helper()
	out := podman(t, append([]string{"exec", c.name, "/probe"}, paths...)...)
	var p probed
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("the probe printed %q: %v", out, err)
	}
	return p
}

// probeMount mounts the probe at /probe, read-only.
func probeMount() []string {
	return []string{"--mount", "type=bind,source=" + probeBin + ",target=/probe,readonly"}
}

// stop stops the container with podman stop and returns how long it took
// and the exit code it recorded.
func (c *container) stop(t *testing.T) (time.Duration, string) {
	t.Helper()
	began := time.Now()
	podman(t, "stop", c.name)
	return time.Since(began), c.inspect(t, "{{.State.ExitCode}}")
}

// uniqueName is a container or volume name no other run uses.
func uniqueName(t *testing.T, what string) string {
	return fmt.Sprintf("gwtest-%d-%s", os.Getpid(), what)
}
