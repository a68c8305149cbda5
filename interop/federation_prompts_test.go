package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
	"github.com/sessiongateway/gateway/testkit/natscluster"
)

// Two hosts on a real three-node NATS cluster: host a follows a fake
// claude.ai session, host b runs a real Claude Code session named as its
// approver. A prompt pending on a's remote leg is shown to that session
// with its host, and the session's "allow" reply, sent to b's gateway,
// reaches the fake cloud through a.
func TestARealSessionOnAnotherHostApprovesARemotePrompt(t *testing.T) {
	needInterop(t)
	c := natscluster.Start(t, natscluster.Options{Nodes: 3})
	wa, wb := gatewaytest.NewWorld(t), gatewaytest.NewWorld(t)
	cloud, sid, follow := startCloud(t, wa)
	requestID := "req-fed-" + uuid.NewString()[:8]
	id := legtest.ShortID(sid, requestID) // the broker's short id, the same on every host

	cmodel := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools(id, []fakeanthropic.Call{{Tool: "SendMessage", Input: fmt.Sprintf(`{"to":"gw-b","message":"allow %s"}`, id)}}, "approved")))
	ga := gatewaytest.Start(t, wa, "gw-a", append(follow, "--federation", c.URLs(), "--host", "a", "--mode", "bypass")...)
	gb := gatewaytest.Start(t, wb, "gw-b", "--federation", c.URL(1)+","+c.URL(2), "--host", "b", "--mode", "bypass", "--approver", "work-b")
	claudecli.Start(t, claudecli.Options{
		APIURL: cmodel.URL(), Name: "work-b", ConfigDir: wb.ConfigDir, XDGRuntimeDir: wb.Runtime,
		Args: []string{"--permission-mode", "bypassPermissions"}, Env: []string{"IS_SANDBOX=1"},
	})
	gb.WaitListed(t, "work-b")
	deadline := time.Now().Add(60 * time.Second)
	for cloud.Subscribers(sid) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	spec := fakecloud.BashPrompt("go test ./...")
	spec.RequestID = requestID
	if _, err := cloud.Prompt(sid, spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, err := cmodel.WaitContains(ctx, "Permission request "+id)
	if err != nil {
		out, _, _ := gb.Run(t, "permissions", "--json")
		t.Fatalf("b's approver never got a's prompt %s: %v (b lists %s)", id, err, out)
	}
	if !strings.Contains(req.Text(), "on host a") {
		t.Errorf("the approver's notice does not name host a: %s", req.Text())
	}
	for ctx.Err() == nil {
		for _, a := range cloud.Answers(sid) {
			if a.RequestID != requestID {
				continue
			}
			if !a.Matched || a.Decision == nil || a.Decision.Behavior != "allow" {
				t.Fatalf("answer = %+v, want an allow that settles the prompt", a)
			}
			settledOnA(t, ga, requestID)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the remote session never got the approver's answer")
}

// settledOnA checks that host a settled the prompt as answered by b's
// approver.
func settledOnA(t *testing.T, ga *gatewaytest.Gateway, requestID string) {
	t.Helper()
	out, _, err := ga.Run(t, "permissions", "--all", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ps []message.PermissionRequest
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.RequestID == requestID {
			if p.State != message.PermissionAnswered || p.Answer == nil || !strings.HasSuffix(p.Answer.By, " on host b") {
				t.Fatalf("a settled the prompt as %+v", p)
			}
			return
		}
	}
	t.Fatalf("a does not list the prompt: %s", out)
}
