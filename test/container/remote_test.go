package container

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

const (
	cloudToken = "container-test-token"
	cloudOrg   = "6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f"
	imageUID   = 65532 // docker/Containerfile's USER
)

// refusingProxy stands before the fake cloud on loopback and answers 503
// to posts of events while refusing is set, as an outage would.
func refusingProxy(t *testing.T, upstream string) (string, *atomic.Bool) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	var refusing atomic.Bool
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusing.Load() && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/events") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"refused by the test proxy"}}`)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &refusing
}

// The remote profile against the fake claude.ai on loopback: the image's
// own user, the state in a named volume, the token as a compose secret.
func TestTheRemoteProfileKeepsItsOutboxAcrossAKill(t *testing.T) {
	needPodman(t)
	cloud := fakecloud.Start(t, fakecloud.Options{Token: cloudToken, OrgUUID: cloudOrg})
	sid := cloud.CreateSession("container target")
	proxyURL, refusing := refusingProxy(t, cloud.URL())

	// Owned by the image's user, 0400: the gateway refuses a token file
	// others can read, and compose mounts the file as it is.
	token := filepath.Join(t.TempDir(), "claude-token")
	if err := os.WriteFile(token, []byte(cloudToken+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(token, imageUID, imageUID); err != nil {
		t.Fatal(err)
	}
	project := uniqueName(t, "remote")
	vol := project + "_remote-state"
	t.Cleanup(func() {
		if _, err := podmanErr("volume", "rm", "--force", vol); err != nil {
			t.Logf("removing volume %s: %v", vol, err)
		}
	})
	vars := map[string]string{"GATEWAY_REMOTE_ORG": cloudOrg, "GATEWAY_REMOTE_TOKEN_SECRET": token}
	line := runLine(t, loadCompose(t, vars), project, "remote", append(probeMount(), "--env", "GATEWAY_REMOTE_URL="+proxyURL)...)
	c := start(t, project, line...)
	c.healthy(t)
	testutil.EventuallyWithin(t, 30*time.Second, "the gateway follows the remote session", func() bool { return cloud.Subscribers(sid) > 0 })

	t.Run("the state volume is the image user's and private, as that user sees it", func(t *testing.T) {
		p := c.probe(t, "/var/lib/gateway")
		if p.UID != imageUID || p.GID != imageUID {
			t.Errorf("runs as %d:%d, want %d:%d", p.UID, p.GID, imageUID, imageUID)
		}
		if len(p.Files) < 2 || len(p.Errors) != 0 {
			t.Fatalf("the probe saw %+v, errors %v", p.Files, p.Errors)
		}
		for _, f := range p.Files {
			ok := f.UID == imageUID && f.GID == imageUID && (f.Mode == "d0700" || !strings.HasPrefix(f.Mode, "d") && f.Mode[2:] == "00")
			if !ok {
				t.Errorf("%s is %s %d:%d, want the image user's and no access for group or others", f.Path, f.Mode, f.UID, f.GID)
			}
		}
		if p.Files[0].Path != "/var/lib/gateway" || p.Files[0].Mode != "d0700" {
			t.Errorf("the state directory is %+v, want d0700", p.Files[0])
		}
		if !slicesContainsPath(p.Files, "/var/lib/gateway/"+outbox.FileName) {
			t.Errorf("no outbox in the state volume: %+v", p.Files)
		}
		hardened(t, p)
	})

	const n = 5
	bodies := make([]string, n)
	t.Run("messages accepted while the cloud refuses wait in the outbox", func(t *testing.T) {
		refusing.Store(true)
		for i := range n {
			bodies[i] = fmt.Sprintf("outbox message %d", i)
			out, err := c.exec(t, "send", "--json", "bridge:"+sid, bodies[i])
			var o router.Outbound
			if jerr := json.Unmarshal([]byte(out), &o); jerr != nil || o.Status != message.StatusQueued {
				t.Fatalf("send %d: %s %v, want it queued", i, out, err)
			}
		}
		if items := outboxItems(t, c); len(items) != n {
			t.Fatalf("%d messages pending, want %d", len(items), n)
		}
	})
	t.Run("after podman kill and a restart they are posted once each", func(t *testing.T) {
		podman(t, "kill", "--signal", "KILL", c.name)
		if code := strings.TrimSpace(podman(t, "wait", c.name)); code != "137" {
			t.Fatalf("exit code %s after podman kill, want 137", code)
		}
		refusing.Store(false)
		podman(t, "start", c.name)
		c.healthy(t)
		users := func() []string {
			var out []string
			for _, m := range cloud.Posted(sid) {
				if m.Type == "user" {
					out = append(out, m.User.Content.Text())
				}
			}
			return out
		}
		testutil.EventuallyWithin(t, 60*time.Second, "every message reached the cloud", func() bool { return len(users()) >= n })
		testutil.EventuallyWithin(t, 20*time.Second, "the outbox is empty", func() bool { return len(outboxItems(t, c)) == 0 })
		if got := users(); strings.Join(got, "|") != strings.Join(bodies, "|") {
			t.Fatalf("the cloud stored %q, want %q once each, in order", got, bodies)
		}
		if d := cloud.Duplicates(sid); d != 0 {
			t.Errorf("%d duplicate posts were sent", d)
		}
	})
	t.Run("podman stop drains it: exit 0", func(t *testing.T) {
		took, code := c.stop(t)
		if code != "0" {
			t.Fatalf("exit code %s after podman stop (%v), want 0", code, took)
		}
	})
}

func slicesContainsPath(fs []struct {
	Path, Mode string
	UID, GID   uint32
}, path string) bool {
	for _, f := range fs {
		if f.Path == path {
			return true
		}
	}
	return false
}

// outboxItems is the container's `gateway outbox --json`.
func outboxItems(t *testing.T, c *container) []message.OutboxItem {
	t.Helper()
	out, err := c.exec(t, "outbox", "--json")
	var items []message.OutboxItem
	if jerr := json.Unmarshal([]byte(out), &items); err != nil || jerr != nil {
		t.Fatalf("gateway outbox --json: %q %v %v", out, err, jerr)
	}
	return items
}
