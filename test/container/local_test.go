package container

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// localVars are the variables the local profile reads, for World w: the
// host user (this process's), the session directories and the state
// directory, all made as an installed CLI would leave them.
func localVars(t *testing.T, w *gatewaytest.World) map[string]string {
	t.Helper()
	for _, d := range []string{w.StateDir, w.QwenHome, filepath.Join(w.Runtime, "cc-socks"), filepath.Join(w.Runtime, "qwen-socks")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return map[string]string{"GATEWAY_UID": fmt.Sprint(os.Getuid()), "GATEWAY_GID": fmt.Sprint(os.Getgid()),
		"HOME": w.Root, "CLAUDE_CONFIG_DIR": w.ConfigDir, "QWEN_HOME": w.QwenHome, "XDG_RUNTIME_DIR": w.Runtime,
		"GATEWAY_HOST_STATE_DIR": w.StateDir}
}

// The local profile beside a fake Claude Code and a fake Qwen Code session
// on the host: what the chrooted entrypoint run checks (HEALTHCHECK,
// /readyz, registered on both legs, SIGTERM drains) plus what only the
// runtime shows.
func TestTheLocalProfileRunsBesideTheHostsSessions(t *testing.T) {
	needPodman(t)
	w := gatewaytest.NewWorld(t)
	vars := localVars(t, w)
	cc := fakeclaude.Start(t, fakeclaude.Config{Name: "cc-peer", ConfigDir: w.ConfigDir, RuntimeDir: w.Runtime, Mode: message.ModePrompting})
	qw := fakeqwen.Start(t, fakeqwen.Config{Name: "qw-peer", Home: w.QwenHome, RuntimeDir: w.Runtime, Mode: message.ModePrompting})

	before := registrations(t, w)
	line := runLine(t, loadCompose(t, vars), "gwtest", "local")
	c := start(t, uniqueName(t, "local"), append(probeMount(), line...)...)
	c.healthy(t)
	pid := c.pid(t)
	client := api.NewUnixClient(w.Socket())
	ctx := testutil.Context(t, 90*time.Second)

	t.Run("its /healthz names the image's version and /readyz passes, through its own CLI", func(t *testing.T) {
		version, err := c.exec(t, "version")
		fields := strings.Fields(version)
		if err != nil || len(fields) < 2 {
			t.Fatalf("gateway version: %q %v", version, err)
		}
		if out, err := c.exec(t, "health"); err != nil || !strings.Contains(out, `"version":"`+fields[1]+`"`) {
			t.Fatalf("gateway health: %q %v, want version %s", out, err, fields[1])
		}
		if out, err := c.exec(t, "health", "--ready"); err != nil {
			t.Fatalf("gateway health --ready: %v %s", err, out)
		}
	})
	t.Run("it registers on both legs under its host pid, as the host's sessions find it", func(t *testing.T) {
		for _, p := range []string{
			filepath.Join(w.ConfigDir, "sessions", fmt.Sprintf("%d.json", pid)),
			filepath.Join(w.Runtime, "cc-socks", fmt.Sprintf("%d.sock", pid)),
		} {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("no %s: %v", p, err)
			}
		}
		if m, _ := filepath.Glob(filepath.Join(w.QwenHome, "sessions", fmt.Sprintf("%d*.json", pid))); len(m) == 0 {
			t.Errorf("no Qwen Code record for pid %d in %s", pid, w.QwenHome)
		}
		if now := registrations(t, w); len(now) < len(before)+4 {
			t.Errorf("while it runs: %v; before it ran: %v (want its entry, key file and socket on each leg, and its control socket)", now, before)
		}
	})
	t.Run("it lists the host's sessions and messages each", func(t *testing.T) {
		for _, name := range []string{"cc-peer", "qw-peer"} {
			testutil.EventuallyWithin(t, 20*time.Second, "the gateway lists "+name, func() bool {
				ss, err := client.Sessions(ctx)
				_, ok := gatewaytest.FindSession(ss, name)
				return err == nil && ok
			})
			if _, err := client.Send(ctx, api.SendBody{To: name, Text: "hello " + name}); err != nil {
				t.Fatalf("send to %s: %v", name, err)
			}
		}
		if _, err := cc.WaitReceived(ctx, func(r fakeclaude.Received) bool { return r.Content.Envelope.Body == "hello cc-peer" }); err != nil {
			t.Errorf("the Claude peer got nothing: %v", err)
		}
		if _, err := qw.Wait(ctx, 20*time.Second, func(ev message.Event) bool {
			return ev.Type == message.EventMessage && ev.Message.Body == "hello qw-peer"
		}); err != nil {
			t.Errorf("the Qwen peer got nothing: %v", err)
		}
	})
	t.Run("its root filesystem is read-only, every capability dropped, no new privileges", func(t *testing.T) {
		p := c.probe(t)
		if p.UID != os.Getuid() || p.GID != os.Getgid() {
			t.Errorf("runs as %d:%d, want the host user %d:%d", p.UID, p.GID, os.Getuid(), os.Getgid())
		}
		hardened(t, p)
	})

	t.Run("podman stop drains within the grace period: exit 0, registrations gone", func(t *testing.T) {
		took, code := c.stop(t)
		if code != "0" {
			t.Fatalf("exit code %s after podman stop (%v), want 0 (137 is the runtime's SIGKILL)", code, took)
		}
		t.Logf("podman stop took %v", took)
		if after := registrations(t, w); !slices.Equal(after, before) {
			t.Fatalf("registry entries, key files and sockets after stop: %v, want the host sessions' alone: %v", after, before)
		}
		if _, err := os.Stat(w.Socket()); err == nil {
			t.Fatal("the control socket is left after stop")
		}
	})
}

// registrations are the registry entries, key files and sockets in w's
// session and runtime directories, sorted.
func registrations(t *testing.T, w *gatewaytest.World) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{w.ConfigDir, w.QwenHome, w.Runtime, w.StateDir} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type()&fs.ModeSocket != 0 || strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".key") {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// hardened checks what compose's hardening block sets, as the probe saw
// it from inside.
func hardened(t *testing.T, p probed) {
	t.Helper()
	if p.RootWritable == "" || !strings.Contains(p.RootWritable, "read-only") {
		t.Errorf("writing at / gave %q, want a read-only file system", p.RootWritable)
	}
	if p.TmpWritable != "" {
		t.Errorf("writing in /tmp (a tmpfs) failed: %s", p.TmpWritable)
	}
	for _, k := range []string{"CapPrm", "CapEff", "CapBnd", "CapAmb", "CapInh"} {
		if p.Status[k] != "0000000000000000" {
			t.Errorf("%s = %q, want no capabilities", k, p.Status[k])
		}
	}
	if p.Status["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs = %q, want 1", p.Status["NoNewPrivs"])
	}
}

// Without /etc/machine-id the Claude leg cannot write its pidDomain: the
// gateway says which mount fixes it, and serves the Qwen leg meanwhile.
func TestAMissingMachineIDIsReportedWithTheMountThatFixesIt(t *testing.T) {
	needPodman(t)
	w := gatewaytest.NewWorld(t)
	line := runLine(t, loadCompose(t, localVars(t, w)), "gwtest", "local")
	var kept []string
	for i := 0; i < len(line); i++ {
		if line[i] == "--mount" && strings.Contains(line[i+1], "target=/etc/machine-id") {
			i++
			continue
		}
		kept = append(kept, line[i])
	}
	if len(kept) != len(line)-2 {
		t.Fatalf("the local profile mounts no /etc/machine-id: %v", line)
	}
	c := start(t, uniqueName(t, "no-machine-id"), kept...)
	c.healthy(t)
	var logs string
	testutil.EventuallyWithin(t, 10*time.Second, "the gateway logs why the Claude leg is off", func() bool {
		logs = c.logs()
		return strings.Contains(logs, "Claude Code peer")
	})
	if !strings.Contains(logs, "-v /etc/machine-id:/etc/machine-id:ro") {
		t.Fatalf("the log does not name the mount:\n%s", logs)
	}
	if _, err := os.Stat(filepath.Join(w.ConfigDir, "sessions", fmt.Sprintf("%d.json", c.pid(t)))); err == nil {
		t.Fatal("registered as a Claude Code peer without a machine id")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := api.NewUnixClient(w.Socket()).Sessions(ctx); err != nil {
		t.Fatalf("the gateway does not serve without the Claude leg: %v", err)
	}
}
