package federation

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

const (
	cloudToken = "fed-prompts-token-0123456789"
	cloudOrg   = "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"
)

// followCloud runs a fake claude.ai with one session and returns it, the
// session and the serve flags that follow it.
func followCloud(t *testing.T) (*fakecloud.Server, string, []string) {
	t.Helper()
	cloud := fakecloud.Start(t, fakecloud.Options{Token: cloudToken, OrgUUID: cloudOrg, Echo: true})
	sid := cloud.CreateSession("Build bot")
	tokenFile := filepath.Join(testutil.ShortTempDir(t), "cloud-token")
	if err := os.WriteFile(tokenFile, []byte(cloudToken), 0o600); err != nil {
		t.Fatal(err)
	}
	return cloud, sid, []string{"--remote-url", cloud.URL(), "--remote-org", cloudOrg,
		"--remote-token-file", tokenFile, "--remote-follow", "all"}
}

// prompt is the prompt of request this host lists (with --all), if any.
func (h *host) prompt(t *testing.T, request string) (message.PermissionRequest, bool) {
	t.Helper()
	out, _, err := h.G.Run(t, "permissions", "--all", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ps []message.PermissionRequest
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		t.Fatalf("permissions --json printed %q: %v", out, err)
	}
	for _, p := range ps {
		if p.RequestID == request {
			return p, true
		}
	}
	return message.PermissionRequest{}, false
}

func (h *host) waitPrompt(t *testing.T, request string, state message.PermissionState) message.PermissionRequest {
	t.Helper()
	var got message.PermissionRequest
	testutil.Eventually(t, h.Name+" lists "+request+" "+string(state), func() bool {
		p, ok := h.prompt(t, request)
		got = p
		return ok && p.State == state
	})
	return got
}

// A prompt pending on host a's remote leg is listed on b and c with host
// a; b allows it, the fake cloud gets that answer alone, and c's late
// deny is told it lost to b.
func TestAPromptOnOneHostIsAnsweredFromAnotherAndALateAnswerLoses(t *testing.T) {
	c := cluster(t)
	cloud, sid, follow := followCloud(t)
	a := startHost(t, "a", c.URLs(), follow...)
	b := startHost(t, "b", c.URL(1)+","+c.URL(2))
	cc := startHost(t, "c", c.URL(2)+","+c.URL(0))
	testutil.Eventually(t, "a follows the session", func() bool { return cloud.Subscribers(sid) > 0 })

	rid, err := cloud.Prompt(sid, fakecloud.BashPrompt("go test ./..."))
	if err != nil {
		t.Fatal(err)
	}
	own := a.waitPrompt(t, rid, message.PermissionPending)
	if own.Host != "a" || own.Leg != message.ProtocolRemote {
		t.Fatalf("a lists its prompt as %+v", own)
	}
	p := b.waitPrompt(t, rid, message.PermissionPending)
	if p.Host != "a" || p.ID != own.ID || p.Leg != message.ProtocolFederation || p.ToolName != "Bash" {
		t.Fatalf("b lists a's prompt as %+v", p)
	}
	table, _, err := b.G.Run(t, "permissions")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(table, "\n"); !strings.Contains(lines[0], "HOST") || !strings.Contains(table, p.ID+"  a ") {
		t.Fatalf("b's table:\n%s", table)
	}
	cc.waitPrompt(t, rid, message.PermissionPending)

	out, code, err := b.G.Run(t, "allow", p.ID)
	if err != nil || code != 0 || !strings.HasPrefix(out, "allowed "+p.ID) {
		t.Fatalf("b's allow: %q, exit %d, %v", out, code, err)
	}
	var answers []fakecloud.Answer
	for _, an := range cloud.Answers(sid) {
		if an.RequestID == rid {
			answers = append(answers, an)
		}
	}
	if len(answers) != 1 || !answers[0].Matched || answers[0].Decision == nil || answers[0].Decision.Behavior != "allow" {
		t.Fatalf("the cloud got %+v, want one allow", answers)
	}

	_, code, err = cc.G.Run(t, "deny", p.ID, "--message", "too late")
	if code == 0 || err == nil || !strings.Contains(err.Error(), "already answered (allow) by socket:cli on host b") {
		t.Fatalf("c's late deny: exit %d, %v", code, err)
	}
	if settled := a.waitPrompt(t, rid, message.PermissionAnswered); settled.Answer.By != "socket:cli on host b" {
		t.Fatalf("a settled it as %+v", settled.Answer)
	}
	if n := len(cloud.Answers(sid)); n != 1 {
		t.Fatalf("the cloud got %d answers, want 1", n)
	}
}
