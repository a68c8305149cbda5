package container

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// composeDryRun is the podman run line Debian's podman-compose renders
// for service, split on spaces (no value in these lines has one).
func composeDryRun(t *testing.T, vars map[string]string, service string) []string {
	t.Helper()
	file, err := filepath.Abs(filepath.Join("..", "..", "docker", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("podman-compose", "--dry-run", "-p", "gwdry", "-f", file, "up", "-d", "--no-deps", service)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CONTAINERS_CONF=" + os.Getenv("CONTAINERS_CONF"),
		"CONTAINERS_STORAGE_CONF=" + os.Getenv("CONTAINERS_STORAGE_CONF")}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("podman-compose --dry-run up %s: %v\n%s", service, err, out)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.HasPrefix(line, "podman run --name=gwdry_"+service+"_1 ") {
			return strings.Fields(line)
		}
	}
	t.Fatalf("podman-compose rendered no podman run for %s:\n%s", service, out)
	return nil
}

// docs/container.md says what podman-compose lacks, and these tests run the
// podman run lines instead. This pins both: what it renders of the
// hardening matches runLine, and each gap is still there. When one
// closes, this fails: run that profile under podman-compose then.
func TestPodmanComposeRendersTheHardeningButLacksWhatTheContainerPageSays(t *testing.T) {
	needPodman(t)
	vars := map[string]string{"HOME": "/home/u", "GATEWAY_UID": "1000", "GATEWAY_GID": "1000", "XDG_RUNTIME_DIR": "/run/user/1000"}
	ours := runLine(t, loadCompose(t, vars), "gwdry", "local")
	theirs := composeDryRun(t, vars, "local")
	has := func(line []string, a ...string) bool {
		for i := range line {
			if slices.Equal(line[i:min(i+len(a), len(line))], a) {
				return true
			}
		}
		return false
	}
	for _, a := range [][]string{{"--read-only"}, {"--tmpfs", "/tmp"}, {"--cap-drop", "ALL"},
		{"--security-opt", "no-new-privileges:true"}, {"--network", "none"}} {
		if !has(ours, a...) || !has(theirs, a...) {
			t.Errorf("%v: in runLine %v, in podman-compose's %v", a, has(ours, a...), has(theirs, a...))
		}
	}
	if !has(ours, "--user", "1000:1000") || !has(theirs, "-u", "1000:1000") {
		t.Errorf("the host user is not set by both: %v / %v", ours, theirs)
	}
	gaps := []struct {
		what string
		open bool
	}{
		{"pid: host is dropped", has(ours, "--pid", "host") && !slices.Contains(theirs, "--pid")},
		{"stop_grace_period is dropped", has(ours, "--stop-timeout", "30") && !slices.Contains(theirs, "--stop-timeout")},
		{"network_mode is followed by a bridge network", slices.Contains(theirs, "--net")},
		{"a nested default leaves a stray }", slices.Contains(theirs, "XDG_RUNTIME_DIR=/run/user/1000}")},
	}
	for _, g := range gaps {
		if !g.open {
			t.Errorf("podman-compose no longer fails so (%s): run the profiles under it and update docs/container.md", g.what)
		}
	}
	theirs = composeDryRun(t, nil, "remote")
	if !slices.Contains(theirs, "GATEWAY_REMOTE_ORG=${GATEWAY_REMOTE_ORG:-}") {
		t.Errorf("podman-compose now replaces an empty default: %v", theirs)
	}
}
