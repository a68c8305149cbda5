package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// aliasGateway runs the local legs and the remote leg together, following
// every session of an echoing fake claude.ai.
type aliasGateway struct {
	*gatewaytest.Gateway
	cloud        *fakecloud.Server
	sid, fixedID string
}

func startAliasGateway(t *testing.T, reply string) *aliasGateway {
	t.Helper()
	cloud := fakecloud.Start(t, fakecloud.Options{Token: e2eToken, OrgUUID: e2eOrg, Echo: true})
	sid := cloud.CreateSession("Fix the flaky test!")
	fixed := cloud.CreateSession("a long title nobody wants to type")
	root := t.TempDir()
	tokenFile := filepath.Join(root, "token")
	if err := os.WriteFile(tokenFile, []byte(e2eToken), 0o600); err != nil {
		t.Fatal(err)
	}
	ro := &remoteOpts{url: cloud.URL(), org: e2eOrg, tokenFile: tokenFile, follow: multi{"all"},
		aliases: map[string]string{fixed: "reviewer"}, reply: reply}
	if err := ro.check(); err != nil {
		t.Fatal(err)
	}
	ro.tune = func(c *stream.Config) {
		c.Backoff = clock.Backoff{Initial: 20 * time.Millisecond, Max: 20 * time.Millisecond}
	}
	g := startGateway(t, root, func(c *serveConfig) { c.remote = ro })
	t.Cleanup(func() { g.Stop(t) })
	testutil.Eventually(t, "both sessions are live", func() bool { return cloud.Subscribers(sid) > 0 && cloud.Subscribers(fixed) > 0 })
	return &aliasGateway{Gateway: g, cloud: cloud, sid: sid, fixedID: fixed}
}

func TestLocalSessionsReachRemoteSessionsByAlias(t *testing.T) {
	g := startAliasGateway(t, "result")
	fk := newFake(t, g.Gateway, "work-08", message.ModePrompting)
	q := newQwenPeer(t, g.Gateway, "qwen-work", message.ModePrompting)

	t.Run("every followed remote session has an alias on both local legs, listed with alias_of", func(t *testing.T) {
		claudeAlias(t, g.Gateway, "fix-the-flaky-test")
		claudeAlias(t, g.Gateway, "reviewer")
		qwenAlias(t, q, "fix-the-flaky-test")
		var ss []message.Session
		testutil.Eventually(t, "sessions lists the aliases", func() bool {
			out, _, _ := runCLI(t, g.StateDir, "sessions", "--json")
			ss = nil
			_ = json.Unmarshal([]byte(out), &ss)
			n := 0
			for _, s := range ss {
				if s.AliasOf == "bridge:"+g.sid && s.Name == "fix-the-flaky-test" {
					n++
				}
			}
			return n == 2 // one on each local leg
		})
		for _, s := range ss {
			if s.Protocol == message.ProtocolRemote && s.SessionID == g.sid && (s.Name != "fix-the-flaky-test" || s.Title != "Fix the flaky test!") {
				t.Errorf("remote session listed as %+v", s)
			}
		}
	})

	t.Run("a Claude session's message to the alias reaches the remote session and its answer comes back from the alias", func(t *testing.T) {
		alias := claudeAlias(t, g.Gateway, "fix-the-flaky-test")
		if _, err := fk.Send(ctxT(t), alias, "please look at TestFoo", message.ModePrompting); err != nil {
			t.Fatal(err)
		}
		r, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool {
			return strings.Contains(r.Content.Envelope.Body, "echo: ") && strings.Contains(r.Content.Envelope.Body, "please look at TestFoo")
		})
		if err != nil {
			t.Fatal(err)
		}
		if r.Content.Envelope.FromName != "fix-the-flaky-test" || r.Frame.From != alias {
			t.Fatalf("the answer came from %q at %s, want the alias %s", r.Content.Envelope.FromName, r.Frame.From, alias)
		}
		var posted string
		for _, m := range g.cloud.Posted(g.sid) {
			if m.Type == "user" && strings.Contains(m.User.Content.Text(), "please look at TestFoo") {
				posted = m.User.Content.Text()
			}
		}
		if !strings.Contains(posted, "Message from work-08") {
			t.Errorf("the remote session got %q, want it attributed to work-08", posted)
		}
	})

	t.Run("a Qwen session's message to the alias is answered the same way, with a delivered receipt", func(t *testing.T) {
		a := qwenAlias(t, q, "fix-the-flaky-test")
		id := "b0000000-0000-4000-8000-000000000001"
		if _, err := q.Send(ctxT(t), message.Message{ID: id, To: a.Address, ToSessionID: a.SessionID, Body: "hello from qwen", Mode: message.ModePrompting}); err != nil {
			t.Fatal(err)
		}
		// The receipt and the answer race: take both from one wait.
		var answer *message.Message
		var receipt *message.Receipt
		q.wait(t, func(ev message.Event) bool {
			switch {
			case ev.Type == message.EventReceipt && ev.Receipt.MsgID == id:
				receipt = ev.Receipt
			case ev.Type == message.EventMessage && strings.Contains(ev.Message.Body, "hello from qwen") && strings.Contains(ev.Message.Body, "echo: "):
				answer = ev.Message
			}
			return answer != nil && receipt != nil
		})
		if answer.FromName != "fix-the-flaky-test" {
			t.Errorf("the answer came from %q", answer.FromName)
		}
		if receipt.Status != message.StatusDelivered {
			t.Errorf("the qwen sender heard %+v, want delivered", receipt)
		}
	})

	t.Run("the fixed alias name of --remote-alias routes to its session", func(t *testing.T) {
		alias := claudeAlias(t, g.Gateway, "reviewer")
		if _, err := fk.Send(ctxT(t), alias, "review my change", message.ModePrompting); err != nil {
			t.Fatal(err)
		}
		if _, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool {
			return r.Content.Envelope.FromName == "reviewer" && strings.Contains(r.Content.Envelope.Body, "review my change")
		}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("the alias name resolves to the remote session, not to its aliases", func(t *testing.T) {
		// --wait: its post must be done before the next subtest scripts refusals.
		out, errOut, code := runCLI(t, g.StateDir, "send", "fix-the-flaky-test", "by name", "--json", "--wait", "--timeout", "10s")
		if code != 0 {
			t.Fatalf("send by alias name: exit %d: %s %s", code, out, errOut)
		}
		if !strings.Contains(out, "bridge:"+g.sid) {
			t.Errorf("send went to %s, want bridge:%s", out, g.sid)
		}
	})
	t.Run("a post the server refuses reaches the Claude sender as a failed receipt with the reason", func(t *testing.T) {
		alias := claudeAlias(t, g.Gateway, "fix-the-flaky-test")
		// Last of the subtests: the script may outlive it.
		g.cloud.Fail(fakecloud.FailSpec{Method: "POST", Path: "/v1/sessions/" + g.sid + "/events", Status: 403, Times: 5})
		id, err := fk.Send(ctxT(t), alias, "this one is refused", message.ModePrompting)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool { return f.OrigMsgID == id })
		if err != nil {
			t.Fatal(err)
		}
		if f.Status != claude.WireExpired || f.StatusDetail != "failed" || !strings.Contains(f.Reason, "403") && !strings.Contains(strings.ToLower(f.Reason), "forbidden") && !strings.Contains(strings.ToLower(f.Reason), "permission") {
			t.Fatalf("receipt = %+v, want expired/failed with the server's reason", f)
		}
	})
}

func TestALocalApproverAnswersRemotePrompts(t *testing.T) {
	cloud := fakecloud.Start(t, fakecloud.Options{Token: e2eToken, OrgUUID: e2eOrg})
	sid := cloud.CreateSession("guarded")
	root := t.TempDir()
	tokenFile := filepath.Join(root, "token")
	if err := os.WriteFile(tokenFile, []byte(e2eToken), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startBinary(t, root, "--remote-url", cloud.URL(), "--remote-org", e2eOrg, "--remote-token-file", tokenFile,
		"--remote-follow", "all", "--approver", "boss", "--legs", "claude")
	t.Cleanup(func() { g.Stop(t) })
	boss := newFake(t, g, "boss", message.ModePrompting)
	testutil.Eventually(t, "the session is live and the approver listed", func() bool {
		ss, _ := g.Sessions(ctxT(t))
		for _, s := range ss {
			if s.Name == "boss" {
				return cloud.Subscribers(sid) > 0
			}
		}
		return false
	})
	rid, err := cloud.Prompt(sid, fakecloud.BashPrompt("make deploy"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := boss.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool { return strings.Contains(r.Content.Envelope.Body, "make deploy") })
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for _, w := range strings.Fields(r.Content.Envelope.Body) {
		if len(w) == 7 && w[0] == 'p' {
			id = w
			break
		}
	}
	if id == "" {
		t.Fatalf("no short id in the prompt message: %s", r.Content.Envelope.Body)
	}
	if _, err := boss.SendFromProcess(ctxT(t), r.Frame.From, "allow "+id, message.ModePrompting); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the remote session gets the approver's answer", func() bool {
		for _, a := range cloud.Answers(sid) {
			if a.RequestID == rid && a.Matched && a.Decision != nil && a.Decision.Behavior == "allow" {
				return true
			}
		}
		return false
	})
	if _, err := boss.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool {
		return strings.Contains(r.Content.Envelope.Body, id) && strings.Contains(strings.ToLower(r.Content.Envelope.Body), "allowed")
	}); err != nil {
		t.Errorf("the approver heard no confirmation: %v", err)
	}
}
