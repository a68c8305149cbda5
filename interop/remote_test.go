package interop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/interop/qwencli"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
	"github.com/sessiongateway/gateway/testkit/fakeopenai"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

const (
	cloudToken = "interop-token-0123456789"
	cloudOrg   = "5d7e9f10-2a3b-4c5d-8e9f-a0b1c2d3e4f5"
)

// startCloud runs an echoing fake claude.ai with one session titled
// "Build bot" and writes the gateway's token file; it returns the serve
// flags that follow it.
func startCloud(t *testing.T, w *gatewaytest.World) (*fakecloud.Server, string, []string) {
	t.Helper()
	cloud := fakecloud.Start(t, fakecloud.Options{Token: cloudToken, OrgUUID: cloudOrg, Echo: true})
	sid := cloud.CreateSession("Build bot")
	tokenFile := filepath.Join(w.Root, "cloud-token")
	if err := os.WriteFile(tokenFile, []byte(cloudToken), 0o600); err != nil {
		t.Fatal(err)
	}
	return cloud, sid, []string{"--remote-url", cloud.URL(), "--remote-org", cloudOrg,
		"--remote-token-file", tokenFile, "--remote-follow", "all"}
}

// A real Claude Code session and a real Qwen Code session each message a
// claude.ai remote session by its alias ("build-bot", from its title) and
// get its answer back from that alias.
func TestRealSessionsTalkToARemoteSessionByItsAlias(t *testing.T) {
	needInterop(t)
	needQwen(t)
	w := gatewaytest.NewWorld(t)
	cloud, sid, flags := startCloud(t, w)
	cping := "cping-" + uuid.NewString()[:8]
	qping := "qping-" + uuid.NewString()[:8]

	cmodel := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools("ask-the-remote-session", []fakeanthropic.Call{{Tool: "SendMessage", Input: fmt.Sprintf(`{"to":"build-bot","message":%q}`, cping)}}, "asked")))
	qmodel := fakeopenai.Start(t, fakeopenai.CallToolOnce("ask-the-remote-session", fakeopenai.SendMessageCall("build-bot", qping), "asked"))
	g := gatewaytest.Start(t, w, "gateway-it", append(flags, "--mode", "bypass")...)
	cs := claudecli.Start(t, claudecli.Options{
		APIURL: cmodel.URL(), Name: "work-it", ConfigDir: w.ConfigDir, XDGRuntimeDir: w.Runtime,
		Args: []string{"--permission-mode", "bypassPermissions"}, Env: []string{"IS_SANDBOX=1"},
	})
	qs := startQwenTUI(t, w, qmodel, qwencli.ModeYolo)
	waitAlias(t, g, "build-bot")
	waitQwenAlias(t, w, "build-bot")

	if err := cs.SendUserTurn("ask-the-remote-session"); err != nil {
		t.Fatal(err)
	}
	if err := qs.TypeTurn("ask-the-remote-session"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, err := cmodel.WaitContains(ctx, "echo: ")
	if err != nil {
		t.Fatalf("the Claude session never got the remote session's answer: %v", err)
	}
	if !strings.Contains(req.Text(), cping) || !strings.Contains(req.Text(), `from-name="build-bot"`) {
		t.Errorf("the Claude session's answer is not the echo of its message from build-bot: %s", req.Text())
	}
	if _, err := qmodel.WaitContains(ctx, "echo: Message from "+qs.Name()); err != nil {
		t.Fatalf("the Qwen session never got the remote session's answer: %v", err)
	}
	var asked []string
	for _, m := range cloud.Posted(sid) {
		if m.User != nil {
			asked = append(asked, m.User.Content.Text())
		}
	}
	if all := strings.Join(asked, "\n"); !strings.Contains(all, cping) || !strings.Contains(all, qping) {
		t.Errorf("the remote session got %q, want both pings", asked)
	}
}

// A real Claude Code session named as the approver answers a remote
// session's permission prompt by replying to the gateway's message.
func TestARealSessionApprovesARemotePermissionPrompt(t *testing.T) {
	needInterop(t)
	w := gatewaytest.NewWorld(t)
	cloud, sid, flags := startCloud(t, w)
	requestID := "req-interop-" + uuid.NewString()[:8]
	sum := sha256.Sum256([]byte(sid + "\x00" + requestID))
	id := "p" + hex.EncodeToString(sum[:])[:6] // the broker's short id

	cmodel := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools(id, []fakeanthropic.Call{{Tool: "SendMessage", Input: fmt.Sprintf(`{"to":"gateway-it","message":"allow %s"}`, id)}}, "approved")))
	g := gatewaytest.Start(t, w, "gateway-it", append(flags, "--mode", "bypass", "--approver", "work-it")...)
	claudecli.Start(t, claudecli.Options{
		APIURL: cmodel.URL(), Name: "work-it", ConfigDir: w.ConfigDir, XDGRuntimeDir: w.Runtime,
		Args: []string{"--permission-mode", "bypassPermissions"}, Env: []string{"IS_SANDBOX=1"},
	})
	deadline := time.Now().Add(60 * time.Second)
	listed := func() bool {
		for _, s := range g.Listed(t) {
			if s.Name == "work-it" {
				return true
			}
		}
		return false
	}
	for (cloud.Subscribers(sid) == 0 || !listed()) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	spec := fakecloud.BashPrompt("go test ./...")
	spec.RequestID = requestID
	if _, err := cloud.Prompt(sid, spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := cmodel.WaitContains(ctx, id); err != nil {
		out, _, _ := g.Run(t, "permissions", "--json")
		t.Logf("pending: %s", out)
		wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer wcancel()
		cmd := exec.CommandContext(wctx, gatewaytest.Bin(t), "watch", "--since", "0", "--json")
		cmd.Env = w.Env()
		ev, _ := cmd.Output()
		t.Logf("events: %s", ev)
		t.Fatalf("the approver never got the prompt %s: %v", id, err)
	}
	for ctx.Err() == nil {
		for _, a := range cloud.Answers(sid) {
			if a.RequestID == requestID {
				if !a.Matched || a.Decision == nil || a.Decision.Behavior != "allow" {
					t.Fatalf("answer = %+v, want an allow that settles the prompt", a)
				}
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the remote session never got the approver's answer")
}
